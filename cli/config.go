package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// A Context is one API to talk to, as one principal: what login stores.
type Context struct {
	// Endpoint is the API's /graphql URL.
	Endpoint string `json:"endpoint"`
	// Token is the bearer token (bct_…) the commands call with.
	Token string `json:"token"`
}

// config is the CLI's file: its contexts and the one in use.
type config struct {
	Current  string             `json:"current"`
	Contexts map[string]Context `json:"contexts"`
}

// configPath is where the contexts are kept: $BC_CONFIG, or
// better-compute/config.json in the user's configuration directory.
func configPath(getenv func(string) string) (string, error) {
	if p := getenv("BC_CONFIG"); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("no configuration directory: set BC_CONFIG, XDG_CONFIG_HOME or HOME")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "better-compute", "config.json"), nil
}

// loadConfig reads the contexts; a missing file is none.
func loadConfig(path string) (config, error) {
	c := config{Contexts: map[string]Context{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if c.Contexts == nil {
		c.Contexts = map[string]Context{}
	}
	return c, nil
}

// save writes the contexts readable by their owner only: they hold tokens.
func (c config) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save contexts: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save contexts: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save contexts: %w", err)
	}
	return nil
}

// names are the contexts' names, sorted.
func (c config) names() []string { return slices.Sorted(maps.Keys(c.Contexts)) }

package hostd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/durable"
)

// journal keeps what the daemon knows of each command in a directory, one
// JSON file per command, so that a restarted daemon runs no command twice.
// A journal without a directory keeps nothing: a restarted daemon forgets
// its commands.
type journal struct {
	dir string
}

// entry is one command's journal file.
type entry struct {
	Command hostproto.Command       `json:"command"`
	Status  hostproto.CommandStatus `json:"status"`
}

// journalExt ends a journal file's name; a file being written ends in
// tmpExt until it is renamed.
const (
	journalExt = ".json"
	tmpExt     = ".tmp"
)

// openJournal opens the journal in dir, creating dir, and returns its
// entries by command ID. Files of a write that never completed are
// removed.
func openJournal(dir string) (*journal, map[string]entry, error) {
	j := &journal{dir: dir}
	entries := make(map[string]entry)
	if dir == "" {
		return j, entries, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("command journal: %w", err)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("command journal: %w", err)
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Name())
		switch {
		case strings.HasSuffix(f.Name(), tmpExt):
			if err := os.Remove(path); err != nil {
				return nil, nil, fmt.Errorf("command journal: %w", err)
			}
		case strings.HasSuffix(f.Name(), journalExt):
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, nil, fmt.Errorf("command journal: %w", err)
			}
			var e entry
			if err := json.Unmarshal(b, &e); err != nil || e.Command.ID+journalExt != f.Name() {
				return nil, nil, fmt.Errorf("command journal: %s is not a journal entry", path)
			}
			entries[e.Command.ID] = e
		}
	}
	return j, entries, nil
}

// checkCommandID refuses an ID that is not a command ID, which could name
// a file outside the journal.
func checkCommandID(id string) error {
	if k, _, ok := ids.Parse(id); !ok || k != ids.HostCommand {
		return fmt.Errorf("%q is not a command ID", id)
	}
	return nil
}

// write records e, atomically: a temporary file, synced, renamed over the
// entry's file, and the directory synced.
func (j *journal) write(e entry) error {
	if j.dir == "" {
		return nil
	}
	if err := checkCommandID(e.Command.ID); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal %s: %w", e.Command.ID, err)
	}
	if err := durable.WriteFile(filepath.Join(j.dir, e.Command.ID+journalExt), b, tmpExt); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// remove forgets command id; forgetting one it does not have succeeds.
func (j *journal) remove(id string) error {
	if j.dir == "" || checkCommandID(id) != nil {
		return nil
	}
	err := os.Remove(filepath.Join(j.dir, id+journalExt))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: forget %s: %w", id, err)
	}
	if err := durable.SyncDir(j.dir); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

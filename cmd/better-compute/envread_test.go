package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEnvironmentReadOnlyThroughTables: no package of ours linked into the
// binary calls os.Getenv or os.LookupEnv itself. The environment is read
// only through the conf tables --help lists, so no variable can be read
// without being documented there.
func TestEnvironmentReadOnlyThroughTables(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{if and .Module (eq .Module.Path "github.com/better-compute/vps")}}{{$dir := .Dir}}{{range .GoFiles}}{{$dir}}/{{.}}{{"\n"}}{{end}}{{end}}`,
		".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	call := regexp.MustCompile(`\bos\.(Getenv|LookupEnv)\(`)
	files := strings.Fields(string(out))
	if len(files) < 20 {
		t.Fatalf("go list found only %d files", len(files))
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if call.MatchString(line) {
				t.Errorf("%s:%d reads the environment outside a conf table: %s", filepath.Base(file), i+1, strings.TrimSpace(line))
			}
		}
	}
}

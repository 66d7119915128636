package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/better-compute/vps/internal/version"
)

// printVersion writes the module version and VCS commit the binary was
// built from.
func printVersion(w io.Writer) {
	v, commit := version.Get()
	fmt.Fprintf(w, "better-compute\nversion: %s\ncommit:  %s\ngo:      %s\n", v, commit, runtime.Version())
}

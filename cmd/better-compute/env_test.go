package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMalformedEnvironment: a malformed value stops a command at start
// with a message naming the variable, before it connects to anything.
func TestMalformedEnvironment(t *testing.T) {
	// Postgres and Redis are a listener that counts who connects.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var connected atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connected.Add(1)
			c.Close()
		}
	}()
	stores := []string{
		"DATABASE_URL=postgres://bc@" + ln.Addr().String() + "/bc", "REDIS_URL=redis://" + ln.Addr().String(), "BC_SECRET=secret",
	}

	for _, c := range []struct {
		command string
		env     string
		want    string
	}{
		{"serve", "BC_HOST_SILENT_AFTER=5", `better-compute serve: BC_HOST_SILENT_AFTER: "5" has no unit`},
		{"serve", "BC_HOST_SILENT_AFTER=-30s", `better-compute serve: BC_HOST_SILENT_AFTER: "-30s" is not positive`},
		{"serve", "BC_LIVE_BUFFER=abc", `better-compute serve: BC_LIVE_BUFFER: "abc" is not a whole number`},
		{"serve", "BC_LIVE_BUFFER=0", `better-compute serve: BC_LIVE_BUFFER: "0" is not positive`},
		{"serve", "BC_WS_MAX_CONNECTIONS=-1", `better-compute serve: BC_WS_MAX_CONNECTIONS: "-1" is not positive`},
		{"serve", "BC_PROVIDERS=hetzner,hetzer", `better-compute serve: BC_PROVIDERS: "hetzer" is not a provider kind`},
		{"serve", "BC_RUNTIMES=kvm-libvirt", `better-compute serve: BC_RUNTIMES: "kvm-libvirt" is not a runtime (libvirt-kvm, fake)`},
		{"dev", "BC_RUNTIMES=kvm-libvirt", `better-compute dev: BC_RUNTIMES: "kvm-libvirt" is not a runtime`},
		{"doctor", "BC_RUNTIMES=kvm-libvirt", `better-compute doctor: BC_RUNTIMES: "kvm-libvirt" is not a runtime`},
		{"reconcile", "BC_HOST_SILENT_AFTER=5", `better-compute reconcile: BC_HOST_SILENT_AFTER: "5" has no unit`},
		{"reconcile", "BC_HOST_SILENT_AFTER=soon", `better-compute reconcile: BC_HOST_SILENT_AFTER: "soon" is not a duration`},
		{"dev", "BC_LIVE_BUFFER=abc", `better-compute dev: BC_LIVE_BUFFER: "abc" is not a whole number`},
		{"dev", "BC_USAGE_INTERVAL=5", `better-compute dev: BC_USAGE_INTERVAL: "5" has no unit`},
		{"serve", "BC_LOG_LEVEL=LOUD", `better-compute serve: BC_LOG_LEVEL: "LOUD" is not a level`},
		{"reconcile", "BC_LOG_LEVEL=LOUD", `better-compute reconcile: BC_LOG_LEVEL: "LOUD" is not a level`},
		{"host", "BC_LOG_LEVEL=verbose", `better-compute host: BC_LOG_LEVEL: "verbose" is not a level`},
	} {
		code, stderr := runBinary(t, append(stores, c.env), c.command)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s with %s: exit %d, stderr:\n%s\nwant exit 1 and %q", c.command, c.env, code, stderr, c.want)
		}
	}

	t.Run("nothing set", func(t *testing.T) {
		code, stderr := runBinary(t, nil, "serve")
		for _, name := range []string{"DATABASE_URL", "REDIS_URL", "BC_SECRET"} {
			if code != 1 || !strings.Contains(stderr, "better-compute serve: "+name+" is not set") {
				t.Errorf("serve with nothing set: exit %d, stderr:\n%s\nwant it to name %s", code, stderr, name)
			}
		}
	})

	t.Run("flags", func(t *testing.T) {
		for _, args := range [][]string{
			{"reconcile", "--workers", "0"},
			{"reconcile", "--rescan-interval", "10"},
			{"host", "--heartbeat", "-1s"},
			{"serve", "--no-such-flag"},
			{"serve", "stray"},
			{"token", "--name", "ops"},
		} {
			code, stderr := runBinary(t, stores, args...)
			if code != 2 || !strings.HasPrefix(stderr, "better-compute "+args[0]+": ") {
				t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and what is wrong", args, code, stderr)
			}
		}
	})

	if n := connected.Load(); n > 0 {
		t.Fatalf("%d connections to the stores; a malformed configuration must stop a command first", n)
	}
}

// runBinary runs better-compute with args and only env set of our
// variables, and returns its exit code and what it wrote to stderr.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "BC_") && name != "DATABASE_URL" && name != "REDIS_URL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

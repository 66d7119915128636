package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lxdTarget is BenchmarkChangeToEvent's side-by-side target: an LXD daemon
// of the benchmark's own (scripts/lxd.sh runs it in a network namespace
// with only loopback, LXD_DIR in a temporary directory). A client is a
// websocket on /1.0/events?type=lifecycle over LXD's unix socket; a change
// is a PATCH of the default profile's description, whose event
// (profile-updated) carries no description, so a client knows its change by
// the event's timestamp: the one change whose request was in flight then.
type lxdTarget struct {
	// connect dials the daemon's socket; http's requests go over it.
	connect func(context.Context) (net.Conn, error)
	http    *http.Client

	mu      sync.Mutex
	changes []lxdChange
}

// lxdChange is a change's key and when its request was in flight; to is
// zero until it was answered.
type lxdChange struct {
	key      string
	from, to time.Time
}

// startLXD runs the daemon until b's end (the script's watchdog stops it
// should the benchmark's process die before its cleanup runs).
func startLXD(b *testing.B) (*lxdTarget, error) {
	if _, err := exec.LookPath("lxd"); err != nil {
		return nil, errors.New("lxd is not installed")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("running lxd takes root")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "lxd.sh"))
	if err != nil {
		return nil, err
	}
	dir := b.TempDir()
	b.Cleanup(func() {
		if out, err := exec.Command("bash", script, "stop", dir).CombinedOutput(); err != nil {
			b.Errorf("lxd.sh stop: %v\n%s", err, out)
		}
	})
	if out, err := exec.Command("bash", script, "start", dir, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("lxd.sh start: %v\n%s", err, out)
	}
	socket := filepath.Join(dir, "unix.socket")
	var d net.Dialer
	connect := func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", socket) }
	return &lxdTarget{connect: connect, http: &http.Client{Transport: &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return connect(ctx) },
		MaxIdleConnsPerHost: 4,
	}}}, nil
}

func (t *lxdTarget) dial(b *testing.B, ctx context.Context, _ int, ready func()) client {
	defer ready()
	var conn *frameClient
	raw, err := t.connect(ctx)
	if err == nil {
		conn, err = dialWS(ctx, raw, "ws://lxd/1.0/events?type=lifecycle", "")
	}
	if err != nil {
		b.Errorf("dial lxd events: %v", err)
		return &lxdClient{t: t}
	}
	return &lxdClient{t: t, conn: conn}
}

func (t *lxdTarget) change(b *testing.B, key string) {
	t.mu.Lock()
	i := len(t.changes)
	t.changes = append(t.changes, lxdChange{key: key, from: time.Now()})
	t.mu.Unlock()
	req, _ := http.NewRequest(http.MethodPatch, "http://lxd/1.0/profiles/default", strings.NewReader(`{"description":"`+key+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.http.Do(req)
	if err != nil {
		b.Fatalf("lxd PATCH profile: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("lxd PATCH profile: %s", resp.Status)
	}
	t.mu.Lock()
	t.changes[i].to = time.Now()
	t.mu.Unlock()
}

// keyAt is the key of the change whose request was in flight at ts.
func (t *lxdTarget) keyAt(ts time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.changes) - 1; i >= 0; i-- {
		c := t.changes[i]
		if !ts.Before(c.from) && (c.to.IsZero() || !ts.After(c.to)) {
			return c.key
		}
	}
	return ""
}

// lxdClient is one websocket on LXD's /1.0/events.
type lxdClient struct {
	t    *lxdTarget
	conn *frameClient
}

func (c *lxdClient) next(ctx context.Context) (string, error) {
	if c.conn == nil {
		return "", errors.New("not connected")
	}
	msg, err := c.conn.read()
	if err != nil {
		return "", err
	}
	// Only a lifecycle event of the default profile's update is a change.
	for _, f := range []struct {
		path []string
		want string
	}{
		{[]string{"type"}, `"lifecycle"`},
		{[]string{"metadata", "action"}, `"profile-updated"`},
		{[]string{"metadata", "source"}, `"/1.0/profiles/default"`},
	} {
		if v, err := jsonPath(msg, f.path...); err != nil || string(v) != f.want {
			return "", nil
		}
	}
	v, err := jsonPath(msg, "timestamp")
	if err != nil {
		return "", err
	}
	raw, err := jsonString(v)
	if err != nil {
		return "", err
	}
	ts, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		return "", fmt.Errorf("timestamp: %w", err)
	}
	return c.t.keyAt(ts), nil
}

func (c *lxdClient) close() {
	if c.conn != nil {
		c.conn.close()
	}
}

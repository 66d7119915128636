package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// sandboxWatch reads a sandboxEvents subscription's events, each as
// TYPE/state, into a channel.
func sandboxWatch(t *testing.T, url, token string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	out := make(chan string, 100)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	wsjson.Write(ctx, conn, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	var ack map[string]any
	if err := wsjson.Read(ctx, conn, &ack); err != nil || ack["type"] != "connection_ack" {
		t.Fatalf("init: %v %v", ack, err)
	}
	wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { sandboxEvents { type version reason sandbox { id state } } }`}})
	go func() {
		defer close(done)
		defer close(out)
		for {
			var msg struct {
				Type    string
				Payload struct {
					Data struct {
						SandboxEvents struct {
							Type, Reason string
							Version      int
							Sandbox      struct{ ID, State string }
						}
					}
				}
			}
			if err := wsjson.Read(ctx, conn, &msg); err != nil {
				return
			}
			if msg.Type == "ping" {
				wsjson.Write(ctx, conn, map[string]any{"type": "pong"})
			}
			if msg.Type != "next" {
				continue
			}
			ev := msg.Payload.Data.SandboxEvents
			out <- fmt.Sprintf("%d:%s/%s%s", ev.Version, ev.Type, ev.Sandbox.State, map[bool]string{true: "(" + ev.Reason + ")"}[ev.Reason != ""])
		}
	}()
	return out
}

// TestSandboxLive follows a sandbox through the real processes on a
// subscription — created, started cold, its timeout changed, deleted
// with its tenant — while its host's stats reach
// Sandbox.stats; once the reconciler converges, nothing of the tenant is
// left allocated.
func TestSandboxLive(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 10, serverEnv: []string{"BC_SANDBOX_STATS_INTERVAL=200ms"}})
	events := sandboxWatch(t, c.url, c.member)
	tpl := c.must(c.member, `mutation($in: CreateSandboxTemplateInput!) { createSandboxTemplate(input: $in) { sandboxTemplate { id } } }`,
		map[string]any{"in": map[string]any{"name": "py", "poolId": c.pool, "flavorId": c.flavor, "imageId": c.image, "sshKeys": []string{sshKey}}},
		"createSandboxTemplate", "sandboxTemplate", "id")
	sbx := c.must(c.member, `mutation($t: ID!) { createSandbox(input: {templateId: $t}) { sandbox { id } } }`, map[string]any{"t": tpl},
		"createSandbox", "sandbox", "id")
	var got []string
	await := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev := <-events:
				got = append(got, ev)
				if strings.HasSuffix(ev, ":"+want) {
					return
				}
			case <-timeout:
				t.Fatalf("no %s within 30 s; events so far %v", want, got)
			}
		}
	}
	change := func(mutation, extra string) {
		t.Helper()
		c.must(c.member, `mutation($id: ID!) { `+mutation+`(input: {id: $id`+extra+`}) { sandbox { id } } }`, map[string]any{"id": sbx})
	}
	await("STARTED/RUNNING")
	change("setSandboxTimeout", ", timeout: 900")
	await("TIMEOUT_CHANGED/RUNNING")
	change("pauseSandbox", "")
	await("PAUSED/PAUSED")
	change("resumeSandbox", "")
	await("RESUMED/RUNNING")

	testenv.Eventually(t, 30*time.Second, "two stats points of the sandbox", func() bool {
		data, _ := c.gql(c.member, `query($id: ID!) { sandbox(id: $id) { stats { cpu memoryMb } } }`, map[string]any{"id": sbx})
		stats, _ := data["sandbox"].(map[string]any)["stats"].([]any)
		return len(stats) >= 2
	})

	c.must(c.operator, `mutation($t: ID!) { deleteTenant(input: {id: $t}) { tenant { id } } }`, map[string]any{"t": c.tenant})
	await("DELETED/DELETED(tenant deleted)")
	want := "[1:CREATED/STARTING 2:STARTED/RUNNING 3:TIMEOUT_CHANGED/RUNNING 4:PAUSED/PAUSED 5:RESUMED/RUNNING 6:DELETED/DELETED(tenant deleted)]"
	if fmt.Sprint(got) != want {
		t.Errorf("events:\n got %v\nwant %s", got, want)
	}
	c.settle(30 * time.Second)
	for what, q := range map[string]string{
		"live allocations":      "allocations WHERE released_at IS NULL",
		"live IP leases":        "ip_leases WHERE released_at IS NULL",
		"instances not DELETED": "instances WHERE state <> 'DELETED'",
		"live sandboxes":        "sandboxes WHERE ended_as IS NULL",
		"live templates":        "sandbox_templates WHERE deleted_at IS NULL",
	} {
		if n := c.count(q); n != 0 {
			t.Errorf("%d %s", n, what)
		}
	}
}

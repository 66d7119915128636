package hostcert_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/better-compute/vps/gateway"
	"github.com/better-compute/vps/hostca"
	"github.com/better-compute/vps/hostcert"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/seal"
)

// TestJoinAndRenew: a host joins only a server whose TLS chain holds the
// pinned CA, sending its token to no other; it keeps its key (0600),
// certificate, bundle and ID in its state dir, loads them after a restart,
// and renews with a new key.
func TestJoinAndRenew(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	sealer, _ := seal.New("test")
	log := slog.New(slog.DiscardHandler)
	ca := hostca.New(hostca.Config{DB: db, Sealer: sealer, Logger: log})
	gw := gateway.New(gateway.Config{DB: db, Sealer: sealer, Authority: ca, Logger: log})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", ca.ServerTLS([]string{"127.0.0.1"}))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	server := "https://" + ln.Addr().String()

	host := ids.New()
	for _, q := range []string{
		"INSERT INTO pools (id, name, class, runtime) VALUES ($1, 'p', 'vps-host', 'fake')",
		"INSERT INTO hosts (id, pool_id, name) VALUES ($1, $1, 'hv')",
	} {
		if _, err := db.Exec(ctx, q, host); err != nil {
			t.Fatal(err)
		}
	}
	token, hash := iam.NewSecret("bcj_")
	if _, err := db.Exec(ctx, "INSERT INTO host_join_tokens (token_hash, host_id, expires_at) VALUES ($1, $2, now() + interval '1 hour')", hash, host); err != nil {
		t.Fatal(err)
	}
	pin, err := ca.ServerFingerprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unspent := func() bool {
		var n int
		db.QueryRow(ctx, "SELECT count(*) FROM host_join_tokens WHERE used_at IS NULL").Scan(&n)
		return n == 1
	}

	t.Run("a server without the pinned CA never gets the token", func(t *testing.T) {
		_, err := hostcert.Join(ctx, server, token, strings.Repeat("0", 64), dir)
		if err == nil || !strings.Contains(err.Error(), "--ca-sha256") || errors.Is(err, hostcert.ErrRefused) {
			t.Fatalf("join with another pin: %v", err)
		}
		if !unspent() || hostcert.Exists(dir) {
			t.Fatal("the token was spent, or an identity kept, under the wrong pin")
		}
	})
	var id *hostcert.Identity
	t.Run("join", func(t *testing.T) {
		if id, err = hostcert.Join(ctx, server, token, pin, dir); err != nil {
			t.Fatal(err)
		}
		if id.HostID() != ids.Encode(ids.Host, host) || unspent() || !hostcert.Joined(dir, token) || hostcert.Joined(dir, "bcj_other") {
			t.Fatalf("joined as %s; token unspent %v", id.HostID(), unspent())
		}
		info, err := os.Stat(filepath.Join(dir, "host-identity.pem"))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("identity file: %v %v", info.Mode(), err)
		}
		if _, err := hostcert.Join(ctx, server, token, pin, t.TempDir()); !errors.Is(err, hostcert.ErrRefused) {
			t.Fatalf("joining again with the spent token: %v", err)
		}
	})
	t.Run("load and renew", func(t *testing.T) {
		loaded, err := hostcert.Load(dir)
		if err != nil || loaded.HostID() != id.HostID() || !loaded.NotAfter().Equal(id.NotAfter()) {
			t.Fatalf("loaded %v: %v", loaded, err)
		}
		before, _ := os.ReadFile(filepath.Join(dir, "host-identity.pem"))
		if err := loaded.Renew(ctx, server); err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadFile(filepath.Join(dir, "host-identity.pem"))
		if string(after) == string(before) || loaded.NotAfter().Before(id.NotAfter()) {
			t.Fatal("renewing kept the key and certificate")
		}
		var n int
		db.QueryRow(ctx, "SELECT count(*) FROM host_certificates WHERE host_id = $1", host).Scan(&n)
		if n != 2 {
			t.Fatalf("%d certificates issued, want 2", n)
		}
	})
}

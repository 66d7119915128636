package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/devenv"
	"github.com/better-compute/vps/migrations"
)

// postgres is a Postgres cluster of one test's own, on a free port in a
// directory of its own, so the test may restart it without touching the
// machine's shared server.
type postgres struct {
	t    testing.TB
	bin  string
	dir  string
	cred *syscall.Credential
	// url is the cluster's postgres database, migrated.
	url string
}

// startPostgres initialises and starts a private cluster, migrated, and
// stops it when the test ends. It finds the server as dev does
// (devenv.ServerBinaries, which installs Debian's package when root) and
// skips the test, saying why, when there is none. As root it runs the
// cluster as the postgres user, since Postgres refuses to run as root.
func startPostgres(t testing.TB) *postgres {
	t.Helper()
	bin, err := devenv.ServerBinaries(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Skipf("SKIPPED: no Postgres server binaries (initdb, pg_ctl; Debian's postgresql package, which scripts/services.sh installs): the test needs a Postgres cluster of its own to restart: %v", err)
	}
	// Not t.TempDir: its parents are root's alone, and the cluster may run
	// as another user.
	dir, err := os.MkdirTemp("", "e2e-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &postgres{t: t, bin: bin, dir: dir}
	u, err := devenv.ServerUser()
	if err != nil {
		os.RemoveAll(dir)
		t.Skipf("SKIPPED: %v: a private Postgres cluster needs a user to run as", err)
	}
	if u != nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		p.ctl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	data := filepath.Join(dir, "data")
	if out, err := p.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300", port, dir)
	if out, err := p.ctl("start", "-w", "-t", "60", "-o", opts); err != nil {
		t.Fatalf("pg_ctl start: %v\n%s", err, out)
	}
	p.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, p.url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("migrate the private cluster: %v", err)
	}
	return p
}

// restart stops the cluster (fast: open transactions are rolled back and
// connections closed) and starts it again, waiting until it accepts
// connections.
func (p *postgres) restart() error {
	if out, err := p.ctl("restart", "-m", "fast", "-w", "-t", "60"); err != nil {
		return fmt.Errorf("pg_ctl restart: %w: %s", err, out)
	}
	return nil
}

func (p *postgres) ctl(args ...string) ([]byte, error) {
	return p.run("pg_ctl", append([]string{"-D", filepath.Join(p.dir, "data"), "-l", filepath.Join(p.dir, "postgres.log")}, args...)...)
}

func (p *postgres) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd.CombinedOutput()
}

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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

// postgresBin finds initdb and pg_ctl: on PATH, or in the newest of
// Debian's /usr/lib/postgresql/*/bin (scripts/services.sh installs them).
func postgresBin() (string, bool) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), true
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, true
			}
		}
	}
	return "", false
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// startPostgres initialises and starts a private cluster, migrated, and
// stops it when the test ends. It skips the test, saying why, when initdb
// and pg_ctl are not installed. As root it runs the cluster as the
// postgres user, since Postgres refuses to run as root.
func startPostgres(t testing.TB) *postgres {
	t.Helper()
	bin, ok := postgresBin()
	if !ok {
		t.Skip("SKIPPED: initdb and pg_ctl are not installed (Debian's postgresql package; scripts/services.sh installs it): the test needs a Postgres cluster of its own to restart")
	}
	// Not t.TempDir: its parents are root's alone, and the cluster may run
	// as another user.
	dir, err := os.MkdirTemp("", "e2e-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &postgres{t: t, bin: bin, dir: dir}
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			t.Skip("SKIPPED: running as root and there is no postgres user to run a private Postgres cluster as")
		}
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

// Package devenv provides the embedded defaults of `better-compute dev`: a
// Postgres (the local one, or a private one started from the installed
// server binaries) with dev's database migrated, and an in-process Redis.
package devenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/migrations"
)

// DevDatabase is the database dev uses on its private Postgres server.
const DevDatabase = "better_compute_dev"

// SharedDatabase is the database dev uses on a shared Postgres server: one
// per state dir, since what it seals there opens only with the secret kept
// in that state dir.
func SharedDatabase(stateDir string) string {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		abs = stateDir
	}
	sum := sha256.Sum256([]byte(abs))
	return DevDatabase + "_" + hex.EncodeToString(sum[:5])
}

// LocalServer is where dev looks for a running Postgres first.
const LocalServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Postgres returns the URL of a database for dev: SharedDatabase on the
// local server when it accepts connections, else DevDatabase on a private
// server started under stateDir. stop stops what was started (a no-op for
// the local server).
func Postgres(ctx context.Context, log *slog.Logger, stateDir string) (url string, stop func(), err error) {
	if url, err := ensureDatabase(ctx, LocalServer, SharedDatabase(stateDir)); err == nil {
		log.Info("using the local Postgres", "database", SharedDatabase(stateDir))
		return url, func() {}, nil
	} else {
		log.Info("no local Postgres; starting a private one", "reason", err)
	}
	return startPrivate(ctx, log, filepath.Join(stateDir, "postgres"))
}

// localWait bounds ensureDatabase. Where no server listens the connection
// is refused at once; a server that is there but slow (a loaded machine)
// must not pass for none, which would start a private one (or install
// Postgres) instead.
const localWait = 30 * time.Second

// ensureDatabase connects to serverURL and creates db there if it is missing,
// returning the URL of db.
func ensureDatabase(ctx context.Context, serverURL, db string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, localWait)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up database %s: %w", db, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			var again bool
			if conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&again); !again {
				return "", fmt.Errorf("create database %s: %w", db, err)
			}
		}
	}
	cfg := conn.Config()
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", cfg.User, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), db), nil
}

// startPrivate runs a Postgres server with its data in dir, listening on a
// unix socket in dir and on a free loopback port.
func startPrivate(ctx context.Context, log *slog.Logger, dir string) (string, func(), error) {
	bin, err := ServerBinaries(ctx, log)
	if err != nil {
		return "", nil, err
	}
	owner, err := ServerUser()
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if owner != nil {
		uid, _ := strconv.Atoi(owner.Uid)
		gid, _ := strconv.Atoi(owner.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", nil, fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		log.Info("initializing a private Postgres", "dir", data)
		if out, err := runAs(ctx, owner, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("initdb: %w: %s", err, out)
		}
	}
	port, err := startOnFreePort(ctx, owner, bin, data, dir)
	if err != nil {
		return "", nil, err
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if out, err := runAs(context.Background(), owner, filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
				log.Error("stop private Postgres", "err", err, "output", string(out))
			}
		})
	}
	url, err := ensureDatabase(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), DevDatabase)
	if err != nil {
		stop()
		return "", nil, err
	}
	return url, stop, nil
}

// ServerBinaries finds the newest installed Postgres server (the directory
// of its initdb and pg_ctl), installing Debian's package when none is and
// we are root.
func ServerBinaries(ctx context.Context, log *slog.Logger) (string, error) {
	find := func() string {
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d
			}
		}
		return ""
	}
	if d := find(); d != "" {
		return d, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("no Postgres server is installed: install Debian's postgresql package, or set DATABASE_URL")
	}
	log.Info("installing Debian's postgresql package")
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "postgresql"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w: %s", args[0], err, out)
		}
	}
	if d := find(); d != "" {
		return d, nil
	}
	return "", errors.New("postgresql installed but no server binaries found under /usr/lib/postgresql")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// ServerUser is the user a private Postgres runs as: postgres when we are root (the
// server refuses to run as root), else nil for ourselves.
func ServerUser() (*user.User, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("Postgres cannot run as root and there is no postgres user: %w", err)
	}
	return u, nil
}

// startOnFreePort starts the server on a free loopback port and returns
// it. A port found free may be taken by another process before the server
// binds it: then it tries another, up to three times. A failure says what
// the server logged.
func startOnFreePort(ctx context.Context, owner *user.User, bin, data, dir string) (int, error) {
	logFile := filepath.Join(dir, "server.log")
	var err error
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			return 0, err
		}
		before, _ := os.ReadFile(logFile) // pg_ctl appends to it
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off", port, dir)
		out, startErr := runAs(ctx, owner, filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", logFile, "-w", "start").CombinedOutput()
		if startErr == nil {
			return port, nil
		}
		logged, _ := os.ReadFile(logFile)
		logged = logged[min(len(before), len(logged)):]
		err = fmt.Errorf("start private Postgres on port %d: %w: %s; its log: %s", port, startErr, out, tail(logged, 2000))
		if !bytes.Contains(logged, []byte("could not bind")) {
			break
		}
	}
	return 0, err
}

// tail is the last n bytes of b, as text.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func runAs(ctx context.Context, u *user.User, name string, args ...string) *exec.Cmd {
	if u == nil {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "runuser", append([]string{"-u", u.Username, "--", name}, args...)...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Migrate applies the schema to dev's own database at url. Such a database
// holds only dev's demo data, so Migrate drops it, makes it again and
// migrates that, and logs that it did, when what is in it cannot be used:
// another build migrated it, as one made before the vps migrations were
// renumbered (migrations.UnknownVersionError); or newSecret, dev's sealing
// secret was made anew (its state directory was removed), so nothing
// sealed in it can be opened.
func Migrate(ctx context.Context, log *slog.Logger, url string, newSecret bool) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	if newSecret {
		used, err := migrated(ctx, url)
		if err != nil {
			return err
		}
		if used {
			log.Warn("recreating the dev database: its sealing secret is new (the state directory was removed), so what it sealed cannot be opened, and it holds only demo data",
				"database", cfg.Database)
			if err := recreate(ctx, cfg); err != nil {
				return err
			}
		}
	}
	err = migrate(ctx, url)
	var unknown *migrations.UnknownVersionError
	if !errors.As(err, &unknown) {
		return err
	}
	log.Warn("recreating the dev database: another build of better-compute migrated it, and it holds only demo data",
		"database", cfg.Database, "module", unknown.Module, "version", unknown.Version, "applied", unknown.From)
	if err := recreate(ctx, cfg); err != nil {
		return err
	}
	return migrate(ctx, url)
}

// migrated reports whether the database at url was ever migrated.
func migrated(ctx context.Context, url string) (bool, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, fmt.Errorf("connect to Postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var yes bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('goose_platform') IS NOT NULL").Scan(&yes); err != nil {
		return false, fmt.Errorf("read whether the dev database was migrated: %w", err)
	}
	return yes, nil
}

func migrate(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer pool.Close()
	return migrations.Up(ctx, pool)
}

// recreate drops the database cfg names and makes it again, empty.
func recreate(ctx context.Context, cfg *pgx.ConnConfig) error {
	db := cfg.Database
	server := cfg.Copy()
	server.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, server)
	if err != nil {
		return fmt.Errorf("connect to Postgres to recreate %s: %w", db, err)
	}
	defer conn.Close(context.Background())
	name := pgx.Identifier{db}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", db, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create database %s: %w", db, err)
	}
	return nil
}

package testenv

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Statements records the statements run on the pools it traces (Traced),
// each by its sqlc query's name or, for one sqlc did not write, its first
// word (begin, savepoint, release, commit): what a test of a path's round
// trips compares.
type Statements struct {
	mu  sync.Mutex
	ran []string
	sql map[string]string // the text of each name, as last run
}

// Traced returns a pool on pool's database whose statements s records,
// closed when the test ends.
func Traced(t testing.TB, pool *pgxpool.Pool, s *Statements) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.Tracer = s
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testenv: traced pool: %v", err)
	}
	t.Cleanup(traced.Close)
	return traced
}

// TraceQueryStart records a statement.
func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	name, ok := strings.CutPrefix(d.SQL, "-- name: ")
	if !ok {
		name = strings.TrimSpace(d.SQL)
	}
	name, _, _ = strings.Cut(name, " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = append(s.ran, name)
	if s.sql == nil {
		s.sql = map[string]string{}
	}
	s.sql[name] = d.SQL
	return ctx
}

// SQL is the text of the statement name as it last ran: what a test of its
// plan explains.
func (s *Statements) SQL(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sql[name]
}

// TraceQueryEnd is part of pgx.QueryTracer.
func (s *Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Take returns the statements run since the last Take.
func (s *Statements) Take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ran := s.ran
	s.ran = nil
	return ran
}

// Count is how many times the statement name ran since the last Take.
func (s *Statements) Count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ran := range s.ran {
		if ran == name {
			n++
		}
	}
	return n
}

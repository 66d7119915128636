package graph_test

import (
	"context"
	"log/slog"
	"sync"
)

// logSink is a slog.Handler that keeps what is logged, for tests that
// check what the server logs.
type logSink struct {
	mu      sync.Mutex
	records []logRecord
}

// logRecord is one logged line: its message and attributes.
type logRecord struct {
	Msg   string
	Attrs map[string]any
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }

func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Msg: r.Message, Attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.Resolve().Any()
		return true
	})
	s.mu.Lock()
	s.records = append(s.records, rec)
	s.mu.Unlock()
	return nil
}

func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

// logged returns the records logged with msg.
func (s *logSink) logged(msg string) []logRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logRecord
	for _, r := range s.records {
		if r.Msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// slogOf is a logger writing to s.
func slogOf(s *logSink) *slog.Logger { return slog.New(s) }

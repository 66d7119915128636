package graph

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/better-compute/vps/graph/generated"
)

// TestDocumentsShared: a document that passed is parsed once and shared
// by whoever sends it again; a refused one, or one too long to keep, is
// checked every time.
func TestDocumentsShared(t *testing.T) {
	t.Parallel()
	es := generated.NewExecutableSchema(generated.Config{Resolvers: &Resolver{}})
	d := newDocuments(es.Schema(), Limits{}.WithDefaults(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	const sub = "subscription { instanceEvents { type version instance { id } } }"
	first, err := d.checked(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := d.checked(ctx, sub); err != nil || again != first {
		t.Errorf("the same document again: %p (%v), want the one parsed first, %p", again, err, first)
	}
	if other, _ := d.checked(ctx, "subscription { instanceEvents { type } }"); other == first {
		t.Error("another document was given the first one's parse")
	}
	if _, err := d.checked(ctx, "{ nope }"); err == nil {
		t.Fatal("an invalid document passed")
	}
	if _, err := d.checked(ctx, "{ nope }"); err == nil {
		t.Error("an invalid document passed the second time")
	}
	long := "{ viewer { principal { name } } }" + strings.Repeat(" ", maxPassedBytes)
	a, _ := d.checked(ctx, long)
	if b, _ := d.checked(ctx, long); a == nil || a == b {
		t.Errorf("a document of more than %d bytes was kept", maxPassedBytes)
	}
}

package ids_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
)

func TestLogNamesObjectsByAPIID(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0b7e4c1a-5f3e-4f5e-9d2a-5c3b1e0f9a77")
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("converged", "instance", ids.Log(ids.Instance, id))
	want := `"instance":"` + ids.Encode(ids.Instance, id) + `"`
	if !strings.Contains(buf.String(), want) || strings.Contains(buf.String(), id.String()) {
		t.Errorf("log line %s: want %s and no raw UUID", buf.String(), want)
	}
	if got := fmt.Sprintf("%s", ids.Log(ids.Instance, id)); got != ids.Encode(ids.Instance, id) {
		t.Errorf("in an error's text: %s, want %s", got, ids.Encode(ids.Instance, id))
	}
}

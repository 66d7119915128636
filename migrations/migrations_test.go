package migrations_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/better-compute/vps/migrations"
)

// TestVPSNames checks the embedded vps migrations are the design document's
// first ones, in order, so the numbers after them stay free for the issues
// the document gives them to.
func TestVPSNames(t *testing.T) {
	entries, err := fs.ReadDir(migrations.Files, "vps")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if len(files) == 0 {
		t.Fatal("no vps migrations embedded")
	}
	if err := designPrefix(files); err != nil {
		t.Fatal(err)
	}

	t.Run("a migration off the list fails", func(t *testing.T) {
		for _, files := range [][]string{
			{"0001_instances.sql", "0002_sealed_user_data.sql", "0003_placement.sql"},
			{"0001_instances.sql", "0003_provider_bootstraps.sql"},
			{"0002_sealed_user_data.sql"},
			{"0001_instances.sql", "0002_sealed_user_data.sql", "0001_instances.down.sql"},
		} {
			if designPrefix(files) == nil {
				t.Errorf("%v passes", files)
			}
		}
	})
}

// designPrefix says whether the vps migration files, as fs.ReadDir lists
// them (sorted), are a prefix of migrations.VPSDesign.
func designPrefix(files []string) error {
	if len(files) > len(migrations.VPSDesign) {
		return fmt.Errorf("%d vps migrations, the design document names %d: %v", len(files), len(migrations.VPSDesign), files)
	}
	for i, f := range files {
		if got, want := "vps/"+strings.TrimSuffix(f, ".sql"), migrations.VPSDesign[i]; got != want {
			return fmt.Errorf("vps migration %d is %s.sql, the design document names %s", i+1, got, want)
		}
	}
	return nil
}

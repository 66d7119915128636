// Package docs_test checks what the documentation ships for operators.
package docs_test

import (
	"os/exec"
	"testing"
)

// TestAlertRulesLoad: the example alert rules are valid Prometheus rules,
// as promtool (Debian's prometheus package) checks them.
func TestAlertRulesLoad(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("SKIPPED: promtool is not installed (Debian's prometheus package; scripts/services.sh installs it), so docs/alerts.yml is not checked")
	}
	out, err := exec.Command(promtool, "check", "rules", "alerts.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules alerts.yml: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

package migrations_test

import (
	"context"
	"testing"

	"github.com/better-compute/vps/internal/testenv"
)

// TestMACFor: a leased address's MAC is 02:bc: and its four octets in hex.
func TestMACFor(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	for addr, want := range map[string]string{
		"0.0.0.0":         "02:bc:00:00:00:00",
		"10.201.0.13":     "02:bc:0a:c9:00:0d",
		"255.255.255.255": "02:bc:ff:ff:ff:ff",
	} {
		var got string
		if err := pool.QueryRow(context.Background(), "SELECT mac_for($1::inet)", addr).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("mac_for(%s) = %s, want %s", addr, got, want)
		}
	}
}

package doctor

import (
	"context"
	"fmt"
)

// checkSealed finds values sealed under another secret than the current
// one (vps.secrets.stale): they open only while BC_SECRET_PREVIOUS keeps
// that secret.
func checkSealed(ctx context.Context, d *Doctor) ([]Finding, error) {
	if d.cfg.KeyID == nil {
		return nil, nil
	}
	rows, err := d.q.DoctorStaleSealed(ctx, d.cfg.KeyID)
	if err != nil {
		return nil, fmt.Errorf("count stale sealed values: %w", err)
	}
	var out []Finding
	for _, r := range rows {
		if r.N == 0 {
			continue
		}
		out = append(out, Finding{
			Code: "vps.secrets.stale", Level: LevelWarning, Objects: []string{},
			Message: fmt.Sprintf("%d %s values are sealed under a secret that is not the current BC_SECRET", r.N, r.Kind),
			Remedy:  "run `better-compute reseal` before dropping the old secret from BC_SECRET_PREVIOUS",
		})
	}
	return out, nil
}

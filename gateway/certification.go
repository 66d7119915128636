package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// recordCertification records on a host's live instances how the host
// proved itself in this report: by a certificate still valid, certified
// until its NotAfter; by its bearer credential, not certified. Only the
// instances whose record differs are written (a renewal moves the
// validity, a host back on its bearer credential loses it), each with a
// new version and its live UPDATED event, as every instance change has. It
// runs whatever the report's generation. A report handler.
func recordCertification(ctx context.Context, q *sqlc.Queries, r hostReport) (recorded, error) {
	host := r.host
	p := sqlc.SetHostCertificationParams{Host: host.ID}
	if host.CertNotAfter != nil && time.Now().Before(*host.CertNotAfter) {
		p.Certified, p.ValidBefore = true, host.CertNotAfter
	}
	changed, err := q.SetHostCertification(ctx, p)
	if err != nil {
		return recorded{}, fmt.Errorf("record host certification: %w", err)
	}
	for _, inst := range changed {
		if err := events.Enqueue(ctx, q, vps.TopicEvents, events.Updated, inst); err != nil {
			return recorded{}, err
		}
	}
	return recorded{}, nil
}

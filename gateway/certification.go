package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// certProof is how a host proved itself in a report, as its instances
// record it: certified until validBefore, or not certified.
type certProof struct {
	certified   bool
	validBefore time.Time
}

// recordCertification records on a host's live instances how the host
// proved itself in this report: by a certificate still valid, certified
// until its NotAfter; by its bearer credential, not certified. Only the
// instances whose record differs are written (a renewal moves the
// validity, a host back on its bearer credential loses it), each with a
// new version and its live UPDATED event, as every instance change has. It
// runs whatever the report's generation. A report handler.
//
// A partial report (version 5) skips it when its proof is the one this
// process last recorded for the host: every instance placed since was
// recorded by its placement, and the host's whole reports, every
// heartbeat, check them all anyway (certificationNeeded).
func (g *Gateway) recordCertification(ctx context.Context, q *sqlc.Queries, r hostReport) (recorded, error) {
	proof := proofOf(r.host)
	p := sqlc.SetHostCertificationParams{Host: r.host.ID, Certified: proof.certified}
	if proof.certified {
		p.ValidBefore = &proof.validBefore
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
	return recorded{proof: &proof}, nil
}

// certificationNeeded says whether recordCertification has a report to
// record: every whole one, and a partial one whose proof differs from the
// one this process last recorded for the host.
func (g *Gateway) certificationNeeded(r hostReport) bool {
	last, ok := g.proofs.Load(r.host.ID)
	return !r.report.Partial || !ok || last.(certProof) != proofOf(r.host)
}

// proofOf is how host proved itself in the request it authenticated.
func proofOf(host authenticatedHost) certProof {
	if host.CertNotAfter != nil && time.Now().Before(*host.CertNotAfter) {
		return certProof{certified: true, validBefore: *host.CertNotAfter}
	}
	return certProof{}
}

package hostcert

import (
	"context"
	"log/slog"
	"time"
)

// The waits between retries of a failed renewal: from minRetry, doubling,
// up to maxRetry.
const (
	minRetry = time.Second
	maxRetry = time.Minute
)

// KeepRenewed renews the certificate at two thirds of its life, and
// retries a failed renewal with backoff, until ctx ends. The connections
// that use the identity pick up each new certificate; nothing else stops.
// An expired certificate cannot be renewed: it says so, loudly, since the
// host then needs a new join token.
func (id *Identity) KeepRenewed(ctx context.Context, server string, log *slog.Logger) {
	retry := time.Duration(0)
	for {
		wait := time.Until(id.renewAt())
		if retry > 0 {
			wait = retry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if id.Expired() {
			log.Error("host certificate expired: this host needs a new join token (createHostJoinToken), then restart the daemon with --join-token",
				"host", id.HostID(), "not_after", id.NotAfter())
		}
		err := id.Renew(ctx, server)
		if err == nil {
			retry = 0
			log.Info("renewed the host certificate", "host", id.HostID(), "not_after", id.NotAfter(), "renew_at", id.renewAt())
			continue
		}
		if ctx.Err() != nil {
			return
		}
		retry = min(max(2*retry, minRetry), maxRetry)
		log.Warn("renew the host certificate", "err", err, "not_after", id.NotAfter(), "retry_in", retry)
	}
}

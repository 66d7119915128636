package gateway

import (
	"errors"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/hostjoin"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
)

// seed serves a provider bootstrap's cloud-init NoCloud seed: a Proxmox
// machine's SMBIOS serial points its cloud-init at
// hostjoin.SeedPathPrefix + token + "/", from which it fetches meta-data
// and user-data (the join script, carrying the token). It is served only
// while the token can still join; anything else is 404, the same for an
// unknown token as for a spent one. The path holds the token: it is never
// logged.
func (g *Gateway) seed(w http.ResponseWriter, r *http.Request) {
	token, file := r.PathValue("token"), r.PathValue("file")
	if g.cfg.HostURL == "" || g.cfg.Authority == nil || !strings.HasPrefix(token, hostproto.JoinTokenPrefix) || len(token) > 100 {
		http.NotFound(w, r)
		return
	}
	b, err := g.q.BootstrapByToken(r.Context(), iam.Hash(token))
	if errors.Is(err, pgx.ErrNoRows) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		g.fail(w, r, "look up bootstrap seed", err)
		return
	}
	var body string
	switch file {
	case "meta-data":
		body = hostjoin.MetaData(b.Name)
	case "user-data":
		pin, err := g.cfg.Authority.ServerFingerprint(r.Context())
		if err != nil {
			g.fail(w, r, "read host CA", err)
			return
		}
		body = hostjoin.Script{Server: g.cfg.HostURL, Token: token, CASHA256: pin}.UserData()
	case "vendor-data", "network-config":
		body = "" // cloud-init asks; there is none
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(body))
}

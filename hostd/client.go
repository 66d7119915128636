package hostd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// reportTimeout bounds one post of a report.
const reportTimeout = 15 * time.Second

// errUnauthorized is the gateway's 401: the credential or certificate is
// wrong, revoked or expired.
var errUnauthorized = errors.New("the gateway refused the host (401)")

// gateway speaks the host protocol to the server's gateway. Every request
// carries the protocol header and the host's credential, or its ID when
// the client presents its certificate.
type gateway struct {
	base       string // the server URL, without a trailing slash
	credential string
	hostID     string
	http       *http.Client
	// version is the protocol version spoken: its paths and header.
	version int
	// runtime names the host's runtime (hostproto.RuntimeHeader); empty:
	// not said.
	runtime string
}

// spec long-polls for the NodeSpec whose generation is above after. ok is
// false when nothing changed within the wait.
func (g *gateway) spec(ctx context.Context, after int64) (spec hostproto.NodeSpec, ok bool, err error) {
	q := url.Values{
		"after": {strconv.FormatInt(after, 10)},
		"wait":  {strconv.Itoa(hostproto.MaxWaitSeconds)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.base+hostproto.SpecPathOf(g.version)+"?"+q.Encode(), nil)
	if err != nil {
		return spec, false, fmt.Errorf("get spec: %w", err)
	}
	resp, err := g.do(req)
	if err != nil {
		return spec, false, fmt.Errorf("get spec: %w", err)
	}
	defer closeBody(resp)
	switch resp.StatusCode {
	case http.StatusNoContent:
		return spec, false, nil
	case http.StatusOK:
		if err := json.NewDecoder(resp.Body).Decode(&spec); err != nil {
			return spec, false, fmt.Errorf("get spec: decode: %w", err)
		}
		if spec.Generation <= after {
			return spec, false, fmt.Errorf("get spec: generation %d is not above %d", spec.Generation, after)
		}
		return spec, true, nil
	default:
		return spec, false, fmt.Errorf("get spec: %w", statusError(resp))
	}
}

// report posts r.
func (g *gateway) report(ctx context.Context, r hostproto.Report) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("post report: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+hostproto.ReportPathOf(g.version), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("post report: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.do(req)
	if err != nil {
		return fmt.Errorf("post report: %w", err)
	}
	defer closeBody(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post report: %w", statusError(resp))
	}
	return nil
}

// do sends req with the protocol header, the credential or host ID and, from
// protocol 3 on, the runtime's name.
func (g *gateway) do(req *http.Request) (*http.Response, error) {
	req.Header.Set(hostproto.Header, strconv.Itoa(g.version))
	if g.credential != "" {
		req.Header.Set("Authorization", "Bearer "+g.credential)
	}
	if g.hostID != "" {
		req.Header.Set(hostproto.HostHeader, g.hostID)
	}
	if g.runtime != "" && g.version >= hostproto.CommandsVersion {
		req.Header.Set(hostproto.RuntimeHeader, g.runtime)
	}
	return g.http.Do(req)
}

// statusError describes a response the daemon did not expect, with the
// start of its body.
func statusError(resp *http.Response) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%w: %s", errUnauthorized, bytes.TrimSpace(msg))
	}
	return fmt.Errorf("gateway answered %s: %s", resp.Status, bytes.TrimSpace(msg))
}

// closeBody drains and closes a response body, so that its connection can
// be reused.
func closeBody(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

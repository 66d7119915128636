package hostproto

// Joining and renewing: a host's certificate (docs/host-protocol.md,
// "Certificates"). Both paths are served on serve's TLS host listener only.
const (
	// JoinPath takes a JoinRequest by POST, with the one-time join token
	// as "Authorization: Bearer bcj_…", and answers a JoinResponse.
	JoinPath = "/host/join"
	// RenewPath takes a JoinRequest by POST from a host authenticated by
	// its current certificate, and answers a JoinResponse.
	RenewPath = "/host/renew"
	// HostHeader names the host (its API ID, host_…) a request presenting
	// a client certificate comes from; it must be the certificate's.
	HostHeader = "BC-Host"
	// JoinTokenPrefix starts every join token.
	JoinTokenPrefix = "bcj_"
	// MaxJoinBody bounds a JoinRequest.
	MaxJoinBody = 64 << 10
)

// JoinRequest asks for a certificate for the key of its signing request.
type JoinRequest struct {
	// CSR is a PEM CERTIFICATE REQUEST signed by the host's new Ed25519
	// key; its subject common name is the host's ID or empty.
	CSR string `json:"csr"`
}

// JoinResponse is a certificate issued to a host.
type JoinResponse struct {
	// HostID is the host's API ID, the certificate's common name.
	HostID string `json:"hostId"`
	// Certificate is the host's certificate, PEM.
	Certificate string `json:"certificate"`
	// CABundle is every CA the control plane trusts, PEM: the host checks
	// the server's certificate against it.
	CABundle string `json:"caBundle"`
}

// Error is the body of a refused join or renew: a code of the API's
// (INVALID_INPUT, UNAUTHENTICATED, …), the field at fault, and why.
type Error struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

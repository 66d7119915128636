package graph

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/graph/model"
	"github.com/better-compute/vps/ids"
)

// changeSandbox runs a mutation of the sandbox named by the API ID id.
func (r *Resolver) changeSandbox(ctx context.Context, action control.Action, id string,
	change func(context.Context, uuid.UUID) (domain.Sandbox, error)) (model.SandboxPayload, error) {
	uid, err := decodeID(ids.Sandbox, "id", id)
	if err != nil {
		return model.SandboxPayload{}, r.svc.Reject(ctx, action, err)
	}
	sbx, err := change(ctx, uid)
	return model.SandboxPayload{Sandbox: sbx}, err
}

// sandboxFilter decodes the filter of the sandboxes list.
func sandboxFilter(in *model.SandboxFilter) (control.SandboxFilter, error) {
	var f control.SandboxFilter
	if in == nil {
		return f, nil
	}
	var d decoder
	if f.TemplateID = d.ptrID(ids.SandboxTemplate, "filter.templateId", in.TemplateID); d.err != nil {
		return f, d.err
	}
	f.State = (*string)(in.State)
	if in.Metadata != nil {
		md, err := stringMap("filter.metadata", in.Metadata)
		if err != nil {
			return f, err
		}
		f.Metadata = md
	}
	return f, nil
}

// snapshotFilter decodes the filter of the sandbox snapshots list.
func snapshotFilter(in *model.SandboxSnapshotFilter) (control.SnapshotFilter, error) {
	var f control.SnapshotFilter
	if in == nil {
		return f, nil
	}
	var d decoder
	f.SandboxID = d.ptrID(ids.Sandbox, "filter.sandboxId", in.SandboxID)
	f.State = (*string)(in.State)
	return f, d.err
}

// envVars takes environment variables as given.
func envVars(in []model.EnvVarInput) []control.EnvVar {
	if in == nil {
		return nil
	}
	out := make([]control.EnvVar, len(in))
	for i, v := range in {
		out[i] = control.EnvVar{Name: v.Name, Value: v.Value}
	}
	return out
}

// networkPolicy takes a network policy as given; nil gives nil.
func networkPolicy(in *model.NetworkPolicyInput) *domain.NetworkPolicy {
	if in == nil {
		return nil
	}
	p := domain.DefaultNetworkPolicy()
	if in.AllowInternetAccess != nil {
		p.AllowInternetAccess = *in.AllowInternetAccess
	}
	if in.AllowOut != nil {
		p.AllowOut = in.AllowOut
	}
	if in.DenyOut != nil {
		p.DenyOut = in.DenyOut
	}
	return &p
}

// secondsOf takes a duration given in seconds; nil gives zero.
func secondsOf(s *int) time.Duration {
	return time.Duration(deref(s)) * time.Second
}

// describeKeys shows authorized_keys lines as SSH keys.
func describeKeys(lines []string) []model.SSHKey {
	keys := make([]model.SSHKey, len(lines))
	for i, line := range lines {
		keys[i].Type, keys[i].Fingerprint, keys[i].Comment = control.DescribeKey(line)
	}
	return keys
}

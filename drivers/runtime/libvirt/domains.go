package libvirt

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/better-compute/vps/drivers/runtime/imagecache"
	"github.com/better-compute/vps/drivers/runtime/netpolicy"
	"github.com/better-compute/vps/drivers/runtime/nocloud"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
)

// Domains implements hostd.Runtime: the domains carrying our metadata.
func (r *Runtime) Domains(ctx context.Context) ([]hostd.Domain, error) {
	all, _, err := r.l.ConnectListAllDomains(1, 0)
	if err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	var out []hostd.Domain
	for _, d := range all {
		if !strings.HasPrefix(d.Name, "bc-") {
			continue
		}
		id, ok := r.owner(d)
		if !ok {
			continue // not ours, whatever its name
		}
		state, reason, err := r.l.DomainGetState(d, 0)
		if golibvirt.IsNotFound(err) {
			continue // gone meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("state of %s: %w", id, err)
		}
		out = append(out, hostd.Domain{ID: id, State: domainState(golibvirt.DomainState(state)), Reason: stateReason(golibvirt.DomainState(state), reason)})
	}
	return out, nil
}

// owner reads the instance ID from a domain's metadata.
func (r *Runtime) owner(d golibvirt.Domain) (string, bool) {
	raw, err := r.l.DomainGetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{metadataNS}, 0)
	if err != nil {
		return "", false
	}
	var o ownership
	if xml.Unmarshal([]byte(raw), &o) != nil || o.Instance == "" || domainName(o.Instance) != d.Name || o.StateDir != r.cfg.StateDir {
		return "", false
	}
	return o.Instance, true
}

func domainState(s golibvirt.DomainState) hostd.DomainState {
	switch s {
	case golibvirt.DomainRunning, golibvirt.DomainBlocked:
		return hostd.DomainRunning
	case golibvirt.DomainPaused, golibvirt.DomainPmsuspended:
		return hostd.DomainPaused
	}
	return hostd.DomainStopped
}

func stateReason(s golibvirt.DomainState, reason int32) string {
	switch {
	case s == golibvirt.DomainCrashed:
		return "crashed"
	case s == golibvirt.DomainShutoff && golibvirt.DomainShutoffReason(reason) == golibvirt.DomainShutoffCrashed:
		return "crashed"
	case s == golibvirt.DomainShutoff && golibvirt.DomainShutoffReason(reason) == golibvirt.DomainShutoffDestroyed:
		return "destroyed"
	}
	return ""
}

// Define implements hostd.Runtime. Every step can be repeated: a daemon
// that died between two of them finds the overlay made and makes the seed
// again, and a defined domain is left as it is.
func (r *Runtime) Define(ctx context.Context, spec hostproto.InstanceSpec) error {
	r.defines.Lock()
	defer r.defines.Unlock()
	if _, ok, err := r.lookup(spec.ID); err != nil || ok {
		return err
	}
	seed, err := nocloud.New(spec)
	if err != nil {
		return fmt.Errorf("define %s: %w: %w", spec.ID, hostd.ErrInvalid, err)
	}
	rules, err := netpolicy.Rules(spec.NetworkPolicy)
	if err != nil {
		return fmt.Errorf("define %s: %w: %w", spec.ID, hostd.ErrInvalid, err)
	}
	if rules != nil && r.cfg.Bridge == "" {
		return fmt.Errorf("define %s: a network policy needs a bridge; this host runs user-mode networking", spec.ID)
	}
	base, format, err := r.backing(ctx, spec)
	if err != nil {
		return fmt.Errorf("define %s: %w", spec.ID, err)
	}
	if err := r.makeOverlay(ctx, spec, base, format); err != nil {
		return fmt.Errorf("define %s: %w", spec.ID, err)
	}
	if err := seed.WriteISO(ctx, r.seed(spec.ID)); err != nil {
		return fmt.Errorf("define %s: %w", spec.ID, err)
	}
	if rules != nil {
		if err := r.defineFilter(spec.ID, rules); err != nil {
			return fmt.Errorf("define %s: %w", spec.ID, err)
		}
	}
	desc, err := r.domainXML(spec, base, format)
	if err != nil {
		return fmt.Errorf("define %s: describe domain: %w", spec.ID, err)
	}
	if _, err := r.l.DomainDefineXML(desc); err != nil {
		if rules != nil {
			if ferr := r.undefineFilter(spec.ID); ferr != nil {
				r.log.WarnContext(ctx, "network filter left behind", "instance", spec.ID, "err", ferr)
			}
		}
		return fmt.Errorf("define %s: %w", spec.ID, err)
	}
	return nil
}

// backing is what the instance's disk is made over, and its format: its
// snapshot's link when it is restored (RestoreFrom), else its cached image.
func (r *Runtime) backing(ctx context.Context, spec hostproto.InstanceSpec) (path, format string, err error) {
	if spec.RestoreFrom != "" {
		path, err := r.linkSnapshot(ctx, spec.ID, spec.RestoreFrom)
		return path, "qcow2", err
	}
	path, err = r.cfg.Images.Get(ctx, spec.Image)
	if errors.Is(err, imagecache.ErrInvalidImage) {
		return "", "", fmt.Errorf("%w: %w", hostd.ErrInvalid, err)
	}
	if err != nil {
		return "", "", fmt.Errorf("image: %w", err)
	}
	return path, spec.Image.Format, nil
}

// makeOverlay makes the instance's disk: a qcow2 overlay of DiskGB over
// base (of format), or a blank disk when base is an ISO.
func (r *Runtime) makeOverlay(ctx context.Context, spec hostproto.InstanceSpec, base, format string) error {
	path := r.overlay(spec.ID)
	if _, err := os.Stat(path); err == nil {
		return nil // made before a crash
	}
	size := strconv.FormatInt(max(spec.DiskGB, 1), 10) + "G"
	args := []string{"create", "-q", "-f", "qcow2"}
	if format != "iso" {
		args = append(args, "-F", format, "-b", base)
	}
	args = append(args, path+".tmp", size)
	if out, err := exec.CommandContext(ctx, "qemu-img", args...).CombinedOutput(); err != nil {
		os.Remove(path + ".tmp")
		return fmt.Errorf("make overlay: %w: %s", err, out)
	}
	return os.Rename(path+".tmp", path)
}

// Start implements hostd.Runtime; starting a running domain does nothing.
func (r *Runtime) Start(ctx context.Context, id string) error {
	d, err := r.must(id)
	if err != nil {
		return err
	}
	if state, _, err := r.l.DomainGetState(d, 0); err == nil && golibvirt.DomainState(state) == golibvirt.DomainRunning {
		return nil
	}
	if err := r.l.DomainCreate(d); err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	r.markStarted(id)
	return nil
}

// Shutdown implements hostd.Runtime: an ACPI shutdown, then, after timeout,
// destroy.
func (r *Runtime) Shutdown(ctx context.Context, id string, timeout time.Duration) error {
	d, err := r.must(id)
	if err != nil {
		return err
	}
	state, _, err := r.l.DomainGetState(d, 0)
	if err != nil {
		return fmt.Errorf("shut down %s: %w", id, err)
	}
	switch golibvirt.DomainState(state) {
	case golibvirt.DomainShutoff, golibvirt.DomainCrashed:
		return nil
	case golibvirt.DomainPaused:
		return r.destroy(d, id) // a frozen guest cannot hear ACPI
	}
	if err := r.l.DomainShutdown(d); err != nil {
		return fmt.Errorf("shut down %s: %w", id, err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		state, _, err := r.l.DomainGetState(d, 0)
		if err == nil && golibvirt.DomainState(state) == golibvirt.DomainShutoff {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.log.WarnContext(ctx, "guest did not shut down in time; destroying it", "instance", id, "timeout", timeout)
	return r.destroy(d, id)
}

func (r *Runtime) destroy(d golibvirt.Domain, id string) error {
	if err := r.l.DomainDestroy(d); err != nil && !isNotRunning(err) {
		return fmt.Errorf("destroy %s: %w", id, err)
	}
	return nil
}

// Pause implements hostd.Runtime.
func (r *Runtime) Pause(ctx context.Context, id string) error {
	d, err := r.must(id)
	if err != nil {
		return err
	}
	if err := r.l.DomainSuspend(d); err != nil {
		return fmt.Errorf("pause %s: %w", id, err)
	}
	return nil
}

// Resume implements hostd.Runtime.
func (r *Runtime) Resume(ctx context.Context, id string) error {
	d, err := r.must(id)
	if err != nil {
		return err
	}
	if err := r.l.DomainResume(d); err != nil {
		return fmt.Errorf("resume %s: %w", id, err)
	}
	return nil
}

// Undefine implements hostd.Runtime: destroy, undefine, and remove the
// network filter, overlay (and a restored domain's link to its snapshot,
// never the snapshot), seed and console log, whether or not the domain
// still exists, so a crash between defining and undefining leaks nothing.
func (r *Runtime) Undefine(ctx context.Context, id string) error {
	d, ok, err := r.lookup(id)
	if err != nil {
		return err
	}
	if ok {
		if err := r.destroy(d, id); err != nil {
			return err
		}
		if err := r.l.DomainUndefineFlags(d, golibvirt.DomainUndefineNvram); err != nil && !golibvirt.IsNotFound(err) {
			return fmt.Errorf("undefine %s: %w", id, err)
		}
	}
	r.forget(id)
	if err := r.undefineFilter(id); err != nil {
		return fmt.Errorf("undefine %s: %w", id, err)
	}
	// A copy of a snapshot a crash interrupted (copyFile's temporary).
	partials, _ := filepath.Glob(r.restoreBase(id) + ".*.tmp")
	for _, path := range append([]string{r.overlay(id), r.restoreBase(id), r.seed(id), r.console(id)}, partials...) {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("undefine %s: %w", id, err)
		}
	}
	return nil
}

// must finds the domain of id, or says it does not exist.
func (r *Runtime) must(id string) (golibvirt.Domain, error) {
	d, ok, err := r.lookup(id)
	if err == nil && !ok {
		err = fmt.Errorf("%s: no such domain", id)
	}
	return d, err
}

// isNotRunning is libvirt's answer to destroying a domain that is off.
func isNotRunning(err error) bool {
	var lerr golibvirt.Error
	return errors.As(err, &lerr) && lerr.Code == uint32(golibvirt.ErrOperationInvalid)
}

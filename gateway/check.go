package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/internal/text"
)

// reportError is a report the gateway refuses, answered with its status:
// 400 for a report outside the protocol, naming the field at fault, and
// 409 for one at odds with what the host was sent.
type reportError struct {
	status int
	field  string
	msg    string
}

func (e *reportError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}

func badReport(field, format string, args ...any) *reportError {
	return &reportError{status: http.StatusBadRequest, field: field, msg: fmt.Sprintf(format, args...)}
}

// states are the instance states of the protocol.
var states = map[hostproto.State]bool{
	hostproto.StateRunning: true, hostproto.StateStopped: true, hostproto.StatePaused: true,
	hostproto.StateFailed: true, hostproto.StateInvalid: true,
}

// maxReason bounds the reason a host gives for an instance's state.
const maxReason = 4096

// decodeReport reads a report body of a protocol version, as that version
// has it; a value that does not fit its field (a number past 64 bits, a
// string for a number) names the field.
func decodeReport(data []byte, version int) (hostproto.Report, error) {
	var rep hostproto.Report
	err := json.Unmarshal(data, &rep)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return rep, badReport(typeErr.Field, "must be a %s", typeErr.Type)
	case err != nil:
		return rep, badReport("", "not valid JSON")
	}
	if rep.Protocol != version {
		return rep, badReport("protocol", "is %d, want %d", rep.Protocol, version)
	}
	rep = rep.As(version)
	return rep, checkReport(rep)
}

// checkReport checks what a report says before anything of it is stored:
// numbers within their columns' range, states from the protocol's set, and
// strings the database can store.
func checkReport(rep hostproto.Report) error {
	if rep.Generation < 0 {
		return badReport("generation", "must not be negative")
	}
	for i, st := range rep.Instances {
		field := fmt.Sprintf("instances[%d]", i)
		if err := text.Check(st.ID); err != nil {
			return badReport(field+".id", "%v", err)
		}
		if !states[st.State] {
			return badReport(field+".state", "%q is not one of running, stopped, paused, failed, invalid", st.State)
		}
		if err := text.Check(st.Reason); err != nil {
			return badReport(field+".reason", "%v", err)
		}
		if len(st.Reason) > maxReason {
			return badReport(field+".reason", "at most %d bytes", maxReason)
		}
		if err := checkStats(field, st); err != nil {
			return err
		}
	}
	if inv := rep.Inventory; inv != nil {
		switch {
		case inv.Vcpus < 0 || inv.Vcpus > math.MaxInt32:
			return badReport("inventory.vcpus", "must be between 0 and %d", math.MaxInt32)
		case inv.MemoryMB < 0:
			return badReport("inventory.memoryMb", "must not be negative")
		case inv.DiskGB < 0:
			return badReport("inventory.diskGb", "must not be negative")
		}
		for i, g := range inv.GPUs {
			for name, v := range map[string]string{"address": g.Address, "vendor": g.Vendor, "model": g.Model} {
				if err := text.Check(v); err != nil {
					return badReport(fmt.Sprintf("inventory.gpus[%d].%s", i, name), "%v", err)
				}
			}
		}
	}
	return nil
}

// maxMemoryBytes bounds the memory a domain may say it holds: 1 PiB, past
// any host.
const maxMemoryBytes = 1 << 50

// checkStats checks the stats of an instance's status: only a running or
// paused domain has them, and their numbers are not negative.
func checkStats(field string, st hostproto.InstanceStatus) error {
	s := st.Stats
	switch {
	case s == nil:
		return nil
	case st.State != hostproto.StateRunning && st.State != hostproto.StatePaused:
		return badReport(field+".stats", "only a running or paused instance has stats, not a %s one", st.State)
	case s.CPUTimeNs < 0:
		return badReport(field+".stats.cpuTimeNs", "must not be negative")
	case s.MemoryBytes < 0 || s.MemoryBytes > maxMemoryBytes:
		return badReport(field+".stats.memoryBytes", "must be between 0 and %d", int64(maxMemoryBytes))
	}
	return nil
}

// refuse answers a refused report.
func refuse(w http.ResponseWriter, err *reportError) {
	http.Error(w, strings.TrimSpace(err.Error()), err.status)
}

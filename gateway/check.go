package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
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

// states are the instance states of the protocol, each with the version
// that added it.
var states = map[hostproto.State]int{
	hostproto.StateRunning: hostproto.MinVersion, hostproto.StateStopped: hostproto.MinVersion, hostproto.StatePaused: hostproto.MinVersion,
	hostproto.StateFailed: hostproto.MinVersion, hostproto.StateInvalid: hostproto.MinVersion,
	hostproto.StateDefining: hostproto.CommandsVersion,
}

// commandStates are the command states of the protocol.
var commandStates = map[hostproto.CommandState]bool{
	hostproto.CommandRunning: true, hostproto.CommandSucceeded: true, hostproto.CommandFailed: true, hostproto.CommandAbandoned: true,
}

// Bounds of what a host says.
const (
	// maxReason bounds the reason a host gives for an instance's state,
	// and the error it gives for a failed command.
	maxReason = 4096
	// maxResult bounds a command's result.
	maxResult = 64 << 10
)

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
	return rep, checkReport(rep, version)
}

// checkReport checks what a report of a version says before anything of
// it is stored: numbers within their columns' range, states from the
// version's set, and strings the database can store.
func checkReport(rep hostproto.Report, version int) error {
	if rep.Generation < 0 {
		return badReport("generation", "must not be negative")
	}
	for i, st := range rep.Instances {
		field := fmt.Sprintf("instances[%d]", i)
		if err := text.Check(st.ID); err != nil {
			return badReport(field+".id", "%v", err)
		}
		if since, ok := states[st.State]; !ok || since > version {
			return badReport(field+".state", "%q is not one of %s", st.State, stateNames(version))
		}
		if st.Generation < 0 || st.Generation > rep.Generation {
			return badReport(field+".generation", "must be between 0 and the report's generation (%d)", rep.Generation)
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
	if err := checkAbsent(rep); err != nil {
		return err
	}
	if err := checkPartialStats(rep); err != nil {
		return err
	}
	if err := checkCommands(rep.Commands); err != nil {
		return err
	}
	if err := checkXids(rep.Xids); err != nil {
		return err
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

// checkAbsent checks the absent list of a report (version 5): only a
// partial report has one, and an instance it names is not also reported.
func checkAbsent(rep hostproto.Report) error {
	if len(rep.Absent) == 0 {
		return nil
	}
	if !rep.Partial {
		return badReport("absent", "only a partial report has one: a whole report's missing instances are absent")
	}
	listed := make(map[string]bool, len(rep.Instances))
	for _, st := range rep.Instances {
		listed[st.ID] = true
	}
	for i, id := range rep.Absent {
		field := fmt.Sprintf("absent[%d]", i)
		if err := text.Check(id); err != nil {
			return badReport(field, "%v", err)
		}
		if listed[id] {
			return badReport(field, "%s is also reported in instances", id)
		}
	}
	return nil
}

// checkPartialStats checks where a report's stats are (version 6): a
// partial report's are in its stats, not in its statuses, and a whole
// report's in its statuses; and that they are in range.
func checkPartialStats(rep hostproto.Report) error {
	if !rep.Partial {
		if len(rep.Stats) > 0 {
			return badReport("stats", "only a partial report has them: a whole report's are in its statuses")
		}
		return nil
	}
	for i, st := range rep.Instances {
		if st.Stats != nil {
			return badReport(fmt.Sprintf("instances[%d].stats", i), "a partial report's stats are in its stats, not in its statuses")
		}
	}
	for _, id := range slices.Sorted(maps.Keys(rep.Stats)) {
		if err := text.Check(id); err != nil {
			return badReport("stats", "an instance ID: %v", err)
		}
		if err := checkStatsRange("stats."+id, rep.Stats[id]); err != nil {
			return err
		}
	}
	return nil
}

// stateNames lists the instance states of a version, for an error.
func stateNames(version int) string {
	names := []string{"running", "stopped", "paused", "failed", "invalid"}
	if version >= hostproto.CommandsVersion {
		names = append(names, string(hostproto.StateDefining))
	}
	return strings.Join(names, ", ")
}

// checkCommands checks the command statuses of a report: each command
// once, a state from the protocol's set, progress a share, and an error and
// result the database can store, within bounds.
func checkCommands(statuses []hostproto.CommandStatus) error {
	seen := make(map[string]bool, len(statuses))
	for i, st := range statuses {
		field := fmt.Sprintf("commands[%d]", i)
		if err := text.Check(st.ID); err != nil {
			return badReport(field+".id", "%v", err)
		}
		if seen[st.ID] {
			return badReport(field+".id", "%s is reported twice", st.ID)
		}
		seen[st.ID] = true
		switch {
		case !commandStates[st.State]:
			return badReport(field+".state", "%q is not one of running, succeeded, failed, abandoned", st.State)
		case st.Progress < 0 || st.Progress > 100:
			return badReport(field+".progress", "must be between 0 and 100")
		case len(st.Error) > maxReason:
			return badReport(field+".error", "at most %d bytes", maxReason)
		case len(st.Result) > maxResult:
			return badReport(field+".result", "at most %d bytes", maxResult)
		}
		if err := text.Check(st.Error); err != nil {
			return badReport(field+".error", "%v", err)
		}
		if err := checkJSONText(st.Result); err != nil {
			return badReport(field+".result", "%v", err)
		}
	}
	return nil
}

// checkJSONText checks that a JSON value's strings (keys too) are ones
// Postgres stores in jsonb: no NUL.
func checkJSONText(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if err := text.Check(string(raw)); err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return errors.New("not valid JSON")
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case string:
			return text.Check(v)
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		case map[string]any:
			for k, e := range v {
				if err := text.Check(k); err != nil {
					return err
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v)
}

// maxMemoryBytes bounds the memory a domain may say it holds: 1 PiB, past
// any host.
const maxMemoryBytes = 1 << 50

// checkStats checks the stats of an instance's status: only a running or
// paused domain has them, and their numbers are not negative.
func checkStats(field string, st hostproto.InstanceStatus) error {
	switch {
	case st.Stats == nil:
		return nil
	case st.State != hostproto.StateRunning && st.State != hostproto.StatePaused:
		return badReport(field+".stats", "only a running or paused instance has stats, not a %s one", st.State)
	}
	return checkStatsRange(field+".stats", *st.Stats)
}

// checkStatsRange checks stats, at field, are within their range.
func checkStatsRange(field string, s hostproto.Stats) error {
	switch {
	case s.CPUTimeNs < 0:
		return badReport(field+".cpuTimeNs", "must not be negative")
	case s.MemoryBytes < 0 || s.MemoryBytes > maxMemoryBytes:
		return badReport(field+".memoryBytes", "must be between 0 and %d", int64(maxMemoryBytes))
	}
	return nil
}

// refuse answers a refused report.
func refuse(w http.ResponseWriter, err *reportError) {
	http.Error(w, strings.TrimSpace(err.Error()), err.status)
}

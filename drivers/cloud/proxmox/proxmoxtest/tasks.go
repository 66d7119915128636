package proxmoxtest

import (
	"fmt"
	"sort"
	"time"
)

// task is a worker task, named by its UPID.
type task struct {
	upid  string
	node  string
	typ   string // qmclone, qmstart, qmstop, qmshutdown, qmdestroy, resize, qmconfig
	id    string // the VMID it acts on (for a clone, the source)
	user  string
	pid   int
	start time.Time
	// end is when the task ends by itself; zero means never (it waits to
	// be ended by another task).
	end  time.Time
	done bool
	// exit is "OK" or the error message, once done.
	exit string
	// vm is the VM whose file lock the task holds, if any.
	vm *vm
	// finish runs when the task ends by itself and returns the exit status.
	finish func() string
	log    []string
}

// startTask registers a task ending after d (never if d < 0) that holds v's
// file lock when v is not nil.
func (e *Emulator) startTask(now time.Time, typ, id, user string, v *vm, d time.Duration, finish func() string) *task {
	e.pid++
	t := &task{node: e.cfg.Node, typ: typ, id: id, user: user, pid: e.pid, start: now, vm: v, finish: finish}
	if d >= 0 {
		t.end = now.Add(d)
	}
	// UPID:node:pid:pstart:starttime:type:id:user: with pid, pstart and
	// starttime in upper-case hex, as pve writes them.
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", t.node, t.pid, t.pid*7, now.Unix(), typ, id, user)
	t.log = []string{fmt.Sprintf("%s %s started", typ, id)}
	if v != nil {
		v.busy = t
	}
	e.tasks[t.upid] = t
	return t
}

// failTask registers a task that fails with msg after the task duration
// without touching any VM.
func (e *Emulator) failTask(now time.Time, typ, id, user, msg string) *task {
	return e.startTask(now, typ, id, user, nil, e.cfg.TaskDuration, func() string { return msg })
}

// lockTimeout is the error of a task that could not take a VM's file lock.
func lockTimeout(vmid int) string {
	return fmt.Sprintf("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", vmid)
}

// advance ends, in order, every task whose end has come by now.
func (e *Emulator) advance(now time.Time) {
	var due []*task
	for _, t := range e.tasks {
		if !t.done && !t.end.IsZero() && !t.end.After(now) {
			due = append(due, t)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].end.Equal(due[j].end) {
			return due[i].end.Before(due[j].end)
		}
		return due[i].pid < due[j].pid
	})
	for _, t := range due {
		exit := "OK"
		if t.finish != nil {
			exit = t.finish()
		}
		e.endTask(t, exit)
	}
}

// endTask marks t done with exit and releases its VM's file lock.
func (e *Emulator) endTask(t *task, exit string) {
	if t.done {
		return
	}
	t.done = true
	t.exit = exit
	if exit == "OK" {
		t.log = append(t.log, "TASK OK")
	} else {
		t.log = append(t.log, "TASK ERROR: "+exit)
	}
	if t.vm != nil && t.vm.busy == t {
		t.vm.busy = nil
	}
}

// taskStatus is the JSON of GET /nodes/{node}/tasks/{upid}/status.
func (t *task) status() map[string]any {
	out := map[string]any{
		"upid":      t.upid,
		"node":      t.node,
		"pid":       t.pid,
		"pstart":    t.pid * 7,
		"starttime": t.start.Unix(),
		"type":      t.typ,
		"id":        t.id,
		"user":      t.user,
		"status":    "running",
	}
	if t.done {
		out["status"] = "stopped"
		out["exitstatus"] = t.exit
	}
	return out
}

package proxmoxtest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// prefix is where the API is served.
const prefix = "/api2/json"

// response is what a handler answers: data on success (code 200), else an
// error code with Proxmox's message, and parameter errors for a 400.
type response struct {
	code int
	msg  string
	errs map[string]string
	data any
}

func ok(data any) response { return response{code: http.StatusOK, data: data} }

// fail is a 500 with msg as the status line's reason phrase, pve's usual
// error.
func fail(format string, args ...any) response {
	return response{code: http.StatusInternalServerError, msg: fmt.Sprintf(format, args...)}
}

// badParams is pve's 400 for parameters that fail the schema.
func badParams(errs map[string]string) response {
	return response{code: http.StatusBadRequest, msg: "Parameter verification failed.", errs: errs}
}

// request is a parsed, authenticated API call.
type request struct {
	method string
	path   string
	parts  []string
	params map[string]string
	user   string
	now    time.Time
}

func (e *Emulator) serve(w http.ResponseWriter, r *http.Request) {
	path, found := strings.CutPrefix(r.URL.Path, prefix)
	if !found {
		write(w, response{code: http.StatusNotFound, msg: "Not Found"})
		return
	}
	user, authed := e.authenticate(r)
	if !authed {
		if d := e.cfg.AuthFailureDelay; d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		write(w, response{code: http.StatusUnauthorized, msg: "authentication failure"})
		return
	}
	params, err := readParams(r)
	if err != nil {
		write(w, badParams(map[string]string{"body": err.Error()}))
		return
	}
	req := &request{method: r.Method, path: path, parts: strings.Split(strings.Trim(path, "/"), "/"),
		params: params, user: user, now: time.Now()}
	e.mu.Lock()
	e.advance(req.now)
	resp := e.route(req)
	e.mu.Unlock()
	write(w, resp)
}

// authenticate checks the API token header, the only scheme emulated.
func (e *Emulator) authenticate(r *http.Request) (user string, ok bool) {
	h, found := strings.CutPrefix(r.Header.Get("Authorization"), "PVEAPIToken=")
	if !found {
		return "", false
	}
	id, secret, found := strings.Cut(h, "=")
	if !found {
		return "", false
	}
	idOK := subtle.ConstantTimeCompare([]byte(id), []byte(e.cfg.TokenID)) == 1
	secretOK := subtle.ConstantTimeCompare([]byte(secret), []byte(e.cfg.Secret)) == 1
	return id, idOK && secretOK
}

// readParams merges the query and the body (JSON, as go-proxmox sends it,
// or form-encoded, as pvesh and curl do) into strings, as pve sees them.
func readParams(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, vs := range r.URL.Query() {
		if len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	if r.Body == nil || r.Method == http.MethodGet || r.Method == http.MethodDelete {
		return out, nil
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
		dec.UseNumber()
		var body map[string]any
		if err := dec.Decode(&body); err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return nil, fmt.Errorf("invalid JSON body: %v", err)
		}
		for k, v := range body {
			switch v := v.(type) {
			case nil:
			case string:
				out[k] = v
			case json.Number:
				out[k] = v.String()
			case bool:
				out[k] = map[bool]string{true: "1", false: "0"}[v]
			default:
				return nil, fmt.Errorf("parameter %q: not a scalar", k)
			}
		}
		return out, nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	for k, vs := range r.PostForm {
		if len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	return out, nil
}

// write sends resp the way pveproxy does: the message in the status line,
// {"data":...} as the body.
func write(w http.ResponseWriter, resp response) {
	body := map[string]any{"data": resp.data}
	if resp.code != http.StatusOK {
		body["data"] = nil
		if resp.msg != "" {
			body["message"] = resp.msg + "\n"
		}
		if len(resp.errs) > 0 {
			body["errors"] = resp.errs
		}
	}
	b, _ := json.Marshal(body)
	reason := strings.NewReplacer("\r", " ", "\n", " ").Replace(resp.msg)
	if resp.code != http.StatusOK && reason != "" {
		if hj, isHJ := w.(http.Hijacker); isHJ {
			if conn, buf, err := hj.Hijack(); err == nil {
				defer conn.Close()
				fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json;charset=UTF-8\r\n"+
					"Content-Length: %d\r\nConnection: close\r\n\r\n", resp.code, reason, len(b))
				buf.Write(b)
				buf.Flush()
				return
			}
		}
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(resp.code)
	w.Write(b)
}

// route dispatches an authenticated request; e.mu is held.
func (e *Emulator) route(r *request) response {
	p := r.parts
	get, post, put, del := r.method == http.MethodGet, r.method == http.MethodPost,
		r.method == http.MethodPut, r.method == http.MethodDelete
	switch {
	case len(p) == 1 && p[0] == "version" && get:
		return ok(map[string]any{"version": "8.2.4", "release": "8.2", "repoid": "faa83925c9641325"})
	case len(p) == 1 && p[0] == "nodes" && get:
		return ok([]map[string]any{{"node": e.cfg.Node, "status": "online", "type": "node",
			"id": "node/" + e.cfg.Node, "level": "", "maxcpu": 32, "maxmem": uint64(128) << 30,
			"maxdisk": uint64(2) << 40, "cpu": 0.02, "mem": uint64(8) << 30, "uptime": 86400}})
	case len(p) == 2 && p[0] == "cluster" && p[1] == "nextid" && get:
		return e.nextID(r)
	case len(p) == 2 && p[0] == "cluster" && p[1] == "resources" && get:
		return e.resources(r)
	case len(p) == 2 && p[0] == "cluster" && p[1] == "status" && get:
		return ok([]map[string]any{{"type": "node", "id": "node/" + e.cfg.Node, "name": e.cfg.Node,
			"nodeid": 1, "online": 1, "local": 1, "ip": "192.0.2.10", "level": ""}})
	case len(p) >= 2 && p[0] == "nodes":
		if p[1] != e.cfg.Node {
			return fail("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", p[1], p[1])
		}
		return e.routeNode(r, p[2:], get, post, put, del)
	}
	return e.notImplemented(r)
}

func (e *Emulator) notImplemented(r *request) response {
	return response{code: http.StatusNotImplemented, msg: fmt.Sprintf("Method '%s %s' not implemented", r.method, r.path)}
}

// routeNode dispatches /nodes/{node}/...; p is what follows the node.
func (e *Emulator) routeNode(r *request, p []string, get, post, put, del bool) response {
	switch {
	case len(p) == 1 && p[0] == "status" && get:
		return ok(map[string]any{"uptime": 86400, "cpu": 0.02, "kversion": "Linux 6.8.12-1-pve",
			"pveversion": "pve-manager/8.2.4/faa83925c9641325", "loadavg": []string{"0.10", "0.12", "0.09"},
			"memory":  map[string]any{"total": uint64(128) << 30, "used": uint64(8) << 30, "free": uint64(120) << 30},
			"cpuinfo": map[string]any{"cpus": 32, "cores": 16, "sockets": 1, "model": "Emulated CPU", "mhz": "3000.000"}})
	case len(p) == 1 && p[0] == "qemu" && get:
		var out []map[string]any
		for _, v := range e.vms {
			out = append(out, e.currentStatus(v))
		}
		return ok(out)
	case len(p) == 3 && p[0] == "tasks" && p[2] == "status" && get:
		t := e.tasks[p[1]]
		if t == nil {
			return fail("no such task")
		}
		return ok(t.status())
	case len(p) == 3 && p[0] == "tasks" && p[2] == "log" && get:
		t := e.tasks[p[1]]
		if t == nil {
			return fail("no such task")
		}
		lines := make([]map[string]any, len(t.log))
		for i, l := range t.log {
			lines[i] = map[string]any{"n": i + 1, "t": l}
		}
		return ok(lines)
	case len(p) >= 2 && p[0] == "qemu":
		vmid, err := strconv.Atoi(p[1])
		if err != nil || vmid < 100 || vmid > 999999999 {
			return badParams(map[string]string{"vmid": fmt.Sprintf("type check ('integer') failed - got '%s'", p[1])})
		}
		rest := p[2:]
		switch {
		case len(rest) == 0 && del:
			return e.destroy(r, vmid)
		case len(rest) == 1 && rest[0] == "clone" && post:
			return e.clone(r, vmid)
		case len(rest) == 1 && rest[0] == "config" && get:
			return e.getConfig(vmid)
		case len(rest) == 1 && rest[0] == "config" && (put || post):
			return e.setConfig(r, vmid, post)
		case len(rest) == 1 && rest[0] == "resize" && put:
			return e.resize(r, vmid)
		case len(rest) == 2 && rest[0] == "status" && rest[1] == "current" && get:
			v := e.vms[vmid]
			if v == nil {
				return e.noConfig(vmid)
			}
			return ok(e.currentStatus(v))
		case len(rest) == 2 && rest[0] == "status" && post:
			switch rest[1] {
			case "start":
				return e.start(r, vmid)
			case "stop":
				return e.stop(r, vmid)
			case "shutdown":
				return e.shutdown(r, vmid)
			case "reboot":
				return e.reboot(r, vmid)
			}
		}
	}
	return e.notImplemented(r)
}

// noConfig is pve's error for a VMID with no VM.
func (e *Emulator) noConfig(vmid int) response {
	return fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", e.cfg.Node, vmid)
}

// locked is pve's error for a VM under a config lock.
func locked(v *vm) response { return fail("VM is locked (%s)", v.lock) }

// lookup returns the VM for a power action, deletion or reconfiguration,
// or the error that refuses it (missing, or locked unless skiplock=1).
func (e *Emulator) lookup(r *request, vmid int) (*vm, *response) {
	v := e.vms[vmid]
	if v == nil {
		resp := e.noConfig(vmid)
		return nil, &resp
	}
	if v.lock != "" && r.params["skiplock"] != "1" {
		resp := locked(v)
		return nil, &resp
	}
	return v, nil
}

// unknownParams is the 400 for parameters outside allowed.
func unknownParams(r *request, allowed ...string) *response {
	errs := map[string]string{}
	for k := range r.params {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
		}
	}
	if len(errs) == 0 {
		return nil
	}
	resp := badParams(errs)
	return &resp
}

func (e *Emulator) nextID(r *request) response {
	if s, found := r.params["vmid"]; found {
		id, err := strconv.Atoi(s)
		if err != nil || id < 100 {
			return badParams(map[string]string{"vmid": fmt.Sprintf("type check ('integer') failed - got '%s'", s)})
		}
		if e.vms[id] != nil {
			return badParams(map[string]string{"vmid": fmt.Sprintf("VM %d already exists", id)})
		}
		return ok(strconv.Itoa(id))
	}
	// pve returns the VMID as a string.
	return ok(strconv.Itoa(e.nextFreeID()))
}

func (e *Emulator) resources(r *request) response {
	typ := r.params["type"]
	switch typ {
	case "", "vm", "node", "storage", "sdn":
	default:
		return badParams(map[string]string{"type": fmt.Sprintf("value '%s' does not have a value in the enumeration 'vm, storage, node, sdn'", typ)})
	}
	out := []map[string]any{}
	if typ == "" || typ == "vm" {
		for _, id := range sortedIDs(e.vms) {
			v := e.vms[id]
			res := map[string]any{
				"id": fmt.Sprintf("qemu/%d", v.vmid), "type": "qemu", "vmid": v.vmid, "name": v.name(),
				"node": v.node, "status": listStatus(v.status), "template": boolInt(v.template),
				"maxcpu": atoiOr(v.config["cores"], 1), "maxmem": uint64(memoryMB(v.config["memory"])) << 20,
				"maxdisk": uint64(diskGB(v.config["scsi0"])) << 30, "uptime": e.uptime(v, r.now),
			}
			if tags := v.config["tags"]; tags != "" {
				res["tags"] = tags
			}
			if v.lock != "" {
				res["lock"] = v.lock
			}
			out = append(out, res)
		}
	}
	if typ == "" || typ == "node" {
		out = append(out, map[string]any{"id": "node/" + e.cfg.Node, "type": "node", "node": e.cfg.Node,
			"status": "online", "maxcpu": 32, "maxmem": uint64(128) << 30})
	}
	if typ == "" || typ == "storage" {
		out = append(out, map[string]any{"id": "storage/" + e.cfg.Node + "/" + e.cfg.Storage, "type": "storage",
			"node": e.cfg.Node, "storage": e.cfg.Storage, "status": "available", "content": "images,rootdir",
			"plugintype": "lvmthin", "shared": 0})
	}
	return ok(out)
}

func (e *Emulator) uptime(v *vm, now time.Time) int64 {
	if v.status != "running" || v.started.IsZero() {
		return 0
	}
	return int64(now.Sub(v.started) / time.Second)
}

// listStatus is a VM's status as /cluster/resources and the node's VM list
// give it: pve tells paused from running only in status/current's
// qmpstatus.
func listStatus(status string) string {
	if status == "paused" {
		return "running"
	}
	return status
}

// currentStatus is the JSON of GET .../status/current.
func (e *Emulator) currentStatus(v *vm) map[string]any {
	out := map[string]any{
		"vmid": v.vmid, "name": v.name(), "status": listStatus(v.status), "qmpstatus": v.status,
		"cpus": atoiOr(v.config["cores"], 1), "maxmem": uint64(memoryMB(v.config["memory"])) << 20,
		"maxdisk": uint64(diskGB(v.config["scsi0"])) << 30, "uptime": e.uptime(v, time.Now()),
	}
	if v.template {
		out["template"] = 1
	}
	if v.lock != "" {
		out["lock"] = v.lock
	}
	if tags := v.config["tags"]; tags != "" {
		out["tags"] = tags
	}
	return out
}

package hetznertest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// maxUserData is the documented limit on user_data.
const maxUserData = 32 * 1024

// ErrorBody is an error response body in the API's shape, for injected
// faults: ErrorBody("service_unavailable", "try again").
func ErrorBody(code, message string) string {
	b, _ := json.Marshal(errorResponse{Error: apiError{Code: code, Message: message, Details: struct{}{}}})
	return string(b)
}

type errorResponse struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details"`
}

type fieldError struct {
	Name     string   `json:"name"`
	Messages []string `json:"messages"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorResponse{Error: apiError{Code: code, Message: message, Details: struct{}{}}})
}

// writeInvalid answers 400 invalid_input naming the bad fields.
func writeInvalid(w http.ResponseWriter, fields []fieldError) {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = "'" + f.Name + "'"
	}
	msg := "invalid input in field " + names[0]
	if len(names) > 1 {
		msg = "invalid input in fields " + strings.Join(names, ", ")
	}
	writeJSON(w, http.StatusBadRequest, errorResponse{Error: apiError{
		Code: "invalid_input", Message: msg, Details: map[string]any{"fields": fields},
	}})
}

func notFound(w http.ResponseWriter, what string) {
	writeError(w, http.StatusNotFound, "not_found", what+" not found")
}

func (e *Emulator) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/servers", e.handleCreateServer)
	mux.HandleFunc("GET /v1/servers", e.handleListServers)
	mux.HandleFunc("GET /v1/servers/{id}", e.handleGetServer)
	mux.HandleFunc("DELETE /v1/servers/{id}", e.handleDeleteServer)
	mux.HandleFunc("POST /v1/servers/{id}/actions/{command}", e.handleServerAction)
	mux.HandleFunc("GET /v1/actions", e.handleListActions)
	mux.HandleFunc("GET /v1/actions/{id}", e.handleGetAction)
	mux.HandleFunc("GET /v1/ssh_keys", e.handleListSSHKeys)
	mux.HandleFunc("POST /v1/ssh_keys", e.handleCreateSSHKey)
	mux.HandleFunc("GET /v1/ssh_keys/{id}", e.handleGetSSHKey)
	mux.HandleFunc("DELETE /v1/ssh_keys/{id}", e.handleDeleteSSHKey)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { notFound(w, "resource") })

	want := []byte("Bearer " + e.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.nextRequest++
		w.Header().Set("X-Correlation-Id", fmt.Sprintf("%016x", e.nextRequest))
		now := e.now()
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			e.bucket.setHeaders(w.Header(), now)
			e.mu.Unlock()
			writeError(w, http.StatusUnauthorized, "unauthorized", "unable to authenticate")
			return
		}
		ok, wait := e.bucket.take(now)
		e.bucket.setHeaders(w.Header(), now)
		e.mu.Unlock()
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(wait)))
			writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "limit of requests per hour reached")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		mux.ServeHTTP(w, r)
	})
}

// pathID parses the {id} path value; it answers 404 when it is no ID.
func pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		notFound(w, what)
		return 0, false
	}
	return id, true
}

// --- JSON shapes ---

type pagination struct {
	Page         int  `json:"page"`
	PerPage      int  `json:"per_page"`
	PreviousPage *int `json:"previous_page"`
	NextPage     *int `json:"next_page"`
	LastPage     int  `json:"last_page"`
	TotalEntries int  `json:"total_entries"`
}

type meta struct {
	Pagination pagination `json:"pagination"`
}

// writePage writes the page of items the query asks for, as the list
// endpoints do: under key, with meta.pagination.
func writePage[T, J any](w http.ResponseWriter, q url.Values, key string, items []T, toJSON func(T) J) {
	lo, hi, p, bad := paginate(q, len(items))
	if bad != nil {
		writeInvalid(w, bad)
		return
	}
	out := make([]J, 0, hi-lo)
	for _, it := range items[lo:hi] {
		out = append(out, toJSON(it))
	}
	writeJSON(w, http.StatusOK, map[string]any{key: out, "meta": meta{p}})
}

// paginate reads page and per_page (default 25, at most 50) and returns the
// slice bounds of the page among total entries.
func paginate(q url.Values, total int) (lo, hi int, p pagination, bad []fieldError) {
	p.Page, p.PerPage = 1, 25
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad = append(bad, fieldError{Name: "page", Messages: []string{"must be a positive integer"}})
		}
		p.Page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad = append(bad, fieldError{Name: "per_page", Messages: []string{"must be a positive integer"}})
		}
		p.PerPage = min(n, 50)
	}
	if bad != nil {
		return 0, 0, p, bad
	}
	p.TotalEntries = total
	p.LastPage = max(1, (total+p.PerPage-1)/p.PerPage)
	if p.Page > 1 {
		prev := p.Page - 1
		p.PreviousPage = &prev
	}
	if p.Page < p.LastPage {
		next := p.Page + 1
		p.NextPage = &next
	}
	lo = min(total, (p.Page-1)*p.PerPage)
	hi = min(total, lo+p.PerPage)
	return lo, hi, p, nil
}

type serverTypeJSON struct {
	ID           int64   `json:"id"`
	Name         string  `json:"name"`
	Description  string  `json:"description"`
	Category     string  `json:"category"`
	Cores        int     `json:"cores"`
	Memory       float32 `json:"memory"`
	Disk         int     `json:"disk"`
	StorageType  string  `json:"storage_type"`
	CPUType      string  `json:"cpu_type"`
	Architecture string  `json:"architecture"`
	Deprecated   bool    `json:"deprecated"`
	Deprecation  any     `json:"deprecation"`
	Prices       []any   `json:"prices"`
	Locations    []any   `json:"locations"`
}

type imageJSON struct {
	ID           int64             `json:"id"`
	Type         string            `json:"type"`
	Status       string            `json:"status"`
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	ImageSize    *float32          `json:"image_size"`
	DiskSize     float32           `json:"disk_size"`
	Created      time.Time         `json:"created"`
	CreatedFrom  any               `json:"created_from"`
	BoundTo      *int64            `json:"bound_to"`
	OSFlavor     string            `json:"os_flavor"`
	OSVersion    string            `json:"os_version"`
	Architecture string            `json:"architecture"`
	RapidDeploy  bool              `json:"rapid_deploy"`
	Protection   map[string]bool   `json:"protection"`
	Deprecated   *time.Time        `json:"deprecated"`
	Deleted      *time.Time        `json:"deleted"`
	Labels       map[string]string `json:"labels"`
}

type locationJSON struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Country     string  `json:"country"`
	City        string  `json:"city"`
	Latitude    float64 `json:"latitude"`
	Longitude   float64 `json:"longitude"`
	NetworkZone string  `json:"network_zone"`
}

type serverJSON struct {
	ID              int64             `json:"id"`
	Name            string            `json:"name"`
	Status          string            `json:"status"`
	Created         time.Time         `json:"created"`
	PublicNet       publicNetJSON     `json:"public_net"`
	PrivateNet      []any             `json:"private_net"`
	ServerType      serverTypeJSON    `json:"server_type"`
	Location        locationJSON      `json:"location"`
	Image           *imageJSON        `json:"image"`
	ISO             any               `json:"iso"`
	RescueEnabled   bool              `json:"rescue_enabled"`
	Locked          bool              `json:"locked"`
	BackupWindow    *string           `json:"backup_window"`
	OutgoingTraffic *uint64           `json:"outgoing_traffic"`
	IngoingTraffic  *uint64           `json:"ingoing_traffic"`
	IncludedTraffic uint64            `json:"included_traffic"`
	Protection      map[string]bool   `json:"protection"`
	Labels          map[string]string `json:"labels"`
	Volumes         []int64           `json:"volumes"`
	LoadBalancers   []int64           `json:"load_balancers"`
	PrimaryDiskSize int               `json:"primary_disk_size"`
	PlacementGroup  any               `json:"placement_group"`
}

type publicNetJSON struct {
	IPv4        ipv4JSON `json:"ipv4"`
	IPv6        ipv6JSON `json:"ipv6"`
	FloatingIPs []int64  `json:"floating_ips"`
	Firewalls   []any    `json:"firewalls"`
}

type ipv4JSON struct {
	ID      int64  `json:"id"`
	IP      string `json:"ip"`
	Blocked bool   `json:"blocked"`
	DNSPtr  string `json:"dns_ptr"`
}

type ipv6JSON struct {
	ID      int64  `json:"id"`
	IP      string `json:"ip"`
	Blocked bool   `json:"blocked"`
	DNSPtr  []any  `json:"dns_ptr"`
}

type actionJSON struct {
	ID        int64      `json:"id"`
	Command   string     `json:"command"`
	Status    string     `json:"status"`
	Progress  int        `json:"progress"`
	Started   time.Time  `json:"started"`
	Finished  *time.Time `json:"finished"`
	Error     any        `json:"error"`
	Resources []struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	} `json:"resources"`
}

type sshKeyJSON struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Fingerprint string            `json:"fingerprint"`
	PublicKey   string            `json:"public_key"`
	Labels      map[string]string `json:"labels"`
	Created     time.Time         `json:"created"`
}

// Known server types and locations; names configured beyond these get
// plain values.
var (
	serverTypeSpecs = map[string]struct {
		cores, memory, disk int
		cpu, arch           string
	}{
		"cx22": {2, 4, 40, "shared", "x86"}, "cx32": {4, 8, 80, "shared", "x86"},
		"cx42": {8, 16, 160, "shared", "x86"}, "cx52": {16, 32, 320, "shared", "x86"},
		"cpx11": {2, 2, 40, "shared", "x86"}, "cpx21": {3, 4, 80, "shared", "x86"},
		"cpx31": {4, 8, 160, "shared", "x86"}, "cax11": {2, 4, 40, "shared", "arm"},
	}
	locationSpecs = map[string]locationJSON{
		"fsn1": {Description: "Falkenstein DC Park 1", Country: "DE", City: "Falkenstein", Latitude: 50.47612, Longitude: 12.370071, NetworkZone: "eu-central"},
		"nbg1": {Description: "Nuremberg DC Park 1", Country: "DE", City: "Nuremberg", Latitude: 49.452102, Longitude: 11.076665, NetworkZone: "eu-central"},
		"hel1": {Description: "Helsinki DC Park 1", Country: "FI", City: "Helsinki", Latitude: 60.169855, Longitude: 24.938379, NetworkZone: "eu-central"},
		"ash":  {Description: "Ashburn, VA", Country: "US", City: "Ashburn, VA", Latitude: 39.043757, Longitude: -77.487442, NetworkZone: "us-east"},
		"hil":  {Description: "Hillsboro, OR", Country: "US", City: "Hillsboro, OR", Latitude: 45.54222, Longitude: -122.95194, NetworkZone: "us-west"},
		"sin":  {Description: "Singapore", Country: "SG", City: "Singapore", Latitude: 1.283333, Longitude: 103.833333, NetworkZone: "ap-southeast"},
	}
)

func indexOf(list []string, name string) int64 {
	for i, n := range list {
		if n == name {
			return int64(i + 1)
		}
	}
	return 0
}

func (e *Emulator) serverJSON(s *server) serverJSON {
	spec, ok := serverTypeSpecs[s.serverType]
	if !ok {
		spec.cores, spec.memory, spec.disk, spec.cpu, spec.arch = 2, 4, 40, "shared", "x86"
	}
	loc := locationSpecs[s.location]
	loc.ID, loc.Name = indexOf(e.cfg.Locations, s.location), s.location
	if loc.Description == "" {
		loc.Description, loc.NetworkZone = s.location, "eu-central"
	}
	flavor, version, _ := strings.Cut(s.image, "-")
	zero := uint64(0)
	return serverJSON{
		ID: s.id, Name: s.name, Status: s.status, Created: s.created,
		PublicNet: publicNetJSON{
			IPv4:        ipv4JSON{ID: s.id, IP: s.ipv4, DNSPtr: "static." + s.ipv4 + ".clients.your-server.de"},
			IPv6:        ipv6JSON{ID: s.id, IP: s.ipv6, DNSPtr: []any{}},
			FloatingIPs: []int64{}, Firewalls: []any{},
		},
		PrivateNet: []any{},
		ServerType: serverTypeJSON{
			ID: indexOf(e.cfg.ServerTypes, s.serverType), Name: s.serverType, Description: strings.ToUpper(s.serverType),
			Category: "shared_vcpu", Cores: spec.cores, Memory: float32(spec.memory), Disk: spec.disk,
			StorageType: "local", CPUType: spec.cpu, Architecture: spec.arch, Prices: []any{}, Locations: []any{},
		},
		Location: loc,
		Image: &imageJSON{
			ID: indexOf(e.cfg.Images, s.image), Type: "system", Status: "available", Name: s.image,
			Description: s.image, DiskSize: 5, Created: time.Date(2024, 4, 25, 0, 0, 0, 0, time.UTC),
			OSFlavor: flavor, OSVersion: version, Architecture: spec.arch,
			Protection: map[string]bool{"delete": false}, Labels: map[string]string{},
		},
		Locked: s.locks > 0, OutgoingTraffic: &zero, IngoingTraffic: &zero, IncludedTraffic: 21990232555520,
		Protection: map[string]bool{"delete": false, "rebuild": false},
		Labels:     copyLabels(s.labels), Volumes: []int64{}, LoadBalancers: []int64{}, PrimaryDiskSize: spec.disk,
	}
}

func actionToJSON(a *action) actionJSON {
	out := actionJSON{ID: a.id, Command: a.command, Status: a.status, Progress: a.progress, Started: a.started.UTC()}
	if !a.finished.IsZero() {
		f := a.finished.UTC()
		out.Finished = &f
	}
	out.Resources = append(out.Resources, struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}{a.server, "server"})
	return out
}

func sshKeyToJSON(k *sshKey) sshKeyJSON {
	return sshKeyJSON{ID: k.id, Name: k.name, Fingerprint: k.fingerprint, PublicKey: k.publicKey, Labels: copyLabels(k.labels), Created: k.created}
}

// --- servers ---

// idOrName decodes a field that may hold an ID (number or numeric string)
// or a name, and finds it in list; ok is false when it names nothing known.
func idOrName(raw json.RawMessage, list []string) (string, bool) {
	var id int64
	if err := json.Unmarshal(raw, &id); err == nil {
		if id >= 1 && id <= int64(len(list)) {
			return list[id-1], true
		}
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n >= 1 && n <= int64(len(list)) {
			return list[n-1], true
		}
		return "", false
	}
	if indexOf(list, s) == 0 {
		return "", false
	}
	return s, true
}

func (e *Emulator) handleCreateServer(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name             string            `json:"name"`
		ServerType       json.RawMessage   `json:"server_type"`
		Image            json.RawMessage   `json:"image"`
		Location         json.RawMessage   `json:"location"`
		UserData         string            `json:"user_data"`
		SSHKeys          []json.RawMessage `json:"ssh_keys"`
		StartAfterCreate *bool             `json:"start_after_create"`
		Labels           map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "json_error", "invalid JSON in request body")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()

	var bad []fieldError
	field := func(name, msg string) { bad = append(bad, fieldError{Name: name, Messages: []string{msg}}) }
	if req.Name == "" {
		field("name", "is required")
	} else if !validHostname(req.Name) {
		field("name", "must be a valid hostname")
	}
	serverType, ok := idOrName(req.ServerType, e.cfg.ServerTypes)
	if !ok {
		field("server_type", "server type not found")
	}
	image, ok := idOrName(req.Image, e.cfg.Images)
	if !ok {
		field("image", "image not found")
	}
	location := e.cfg.Locations[0]
	if len(req.Location) > 0 && string(req.Location) != "null" {
		if location, ok = idOrName(req.Location, e.cfg.Locations); !ok {
			field("location", "location not found")
		}
	}
	if len(req.UserData) > maxUserData {
		field("user_data", fmt.Sprintf("must be at most %d bytes", maxUserData))
	}
	if msgs := checkLabels(req.Labels); msgs != nil {
		bad = append(bad, fieldError{Name: "labels", Messages: msgs})
	}
	var keys []int64
	for _, raw := range req.SSHKeys {
		if k := e.findSSHKey(raw); k != nil {
			keys = append(keys, k.id)
		} else {
			field("ssh_keys", fmt.Sprintf("ssh key %s not found", raw))
		}
	}
	if bad != nil {
		writeInvalid(w, bad)
		return
	}
	if e.nameTaken(req.Name) {
		writeJSON(w, http.StatusConflict, errorResponse{Error: apiError{
			Code: "uniqueness_error", Message: "server name is already used",
			Details: map[string]any{"fields": []fieldError{{Name: "name", Messages: []string{"is already used"}}}},
		}})
		return
	}
	if len(e.servers) >= e.serverLimit {
		writeError(w, http.StatusForbidden, "resource_limit_exceeded",
			fmt.Sprintf("server limit reached: the project may have %d servers", e.serverLimit))
		return
	}
	start := req.StartAfterCreate == nil || *req.StartAfterCreate
	s, create, next := e.createServer(req.Name, serverType, image, location, req.UserData, keys, copyLabels(req.Labels), start)
	resp := struct {
		Server       serverJSON   `json:"server"`
		Action       actionJSON   `json:"action"`
		NextActions  []actionJSON `json:"next_actions"`
		RootPassword *string      `json:"root_password"`
	}{Server: e.serverJSON(s), Action: actionToJSON(create), NextActions: []actionJSON{}}
	for _, a := range next {
		resp.NextActions = append(resp.NextActions, actionToJSON(a))
	}
	if len(keys) == 0 {
		pw := rand.Text()[:20]
		resp.RootPassword = &pw
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (e *Emulator) handleListServers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := parseSelector(q.Get("label_selector"))
	if err != nil {
		writeInvalid(w, []fieldError{{Name: "label_selector", Messages: []string{err.Error()}}})
		return
	}
	statuses := q["status"]
	name := q.Get("name")
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	var match []*server
	for _, s := range e.sortedServers() {
		if (name == "" || s.name == name) && sel.matches(s.labels) &&
			(len(statuses) == 0 || contains(statuses, s.status)) {
			match = append(match, s)
		}
	}
	writePage(w, q, "servers", match, e.serverJSON)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// lookupServer finds the {id} server, answering 404 when there is none.
// Call with e.mu held.
func (e *Emulator) lookupServer(w http.ResponseWriter, r *http.Request) *server {
	id, ok := pathID(w, r, "server")
	if !ok {
		return nil
	}
	s, ok := e.servers[id]
	if !ok {
		notFound(w, "server")
		return nil
	}
	return s
}

func (e *Emulator) handleGetServer(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	if s := e.lookupServer(w, r); s != nil {
		writeJSON(w, http.StatusOK, struct {
			Server serverJSON `json:"server"`
		}{e.serverJSON(s)})
	}
}

func (e *Emulator) handleDeleteServer(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	if s := e.lookupServer(w, r); s != nil {
		writeJSON(w, http.StatusOK, struct {
			Action actionJSON `json:"action"`
		}{actionToJSON(e.deleteServer(s))})
	}
}

func (e *Emulator) handleServerAction(w http.ResponseWriter, r *http.Request) {
	command := r.PathValue("command")
	switch command {
	case "poweron", "poweroff", "shutdown", "reboot":
	default:
		notFound(w, "action "+command)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	s := e.lookupServer(w, r)
	if s == nil {
		return
	}
	if s.locks > 0 {
		writeError(w, http.StatusLocked, "locked", fmt.Sprintf("server %d is locked by a running action", s.id))
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		Action actionJSON `json:"action"`
	}{actionToJSON(e.power(command, s))})
}

// --- actions ---

func (e *Emulator) handleListActions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if len(q["id"]) == 0 {
		writeInvalid(w, []fieldError{{Name: "id", Messages: []string{"at least one id is required"}}})
		return
	}
	ids := map[int64]bool{}
	for _, v := range q["id"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeInvalid(w, []fieldError{{Name: "id", Messages: []string{"must be an integer"}}})
			return
		}
		ids[id] = true
	}
	statuses := q["status"]
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	var match []*action
	for id := range ids {
		if a, ok := e.actions[id]; ok && (len(statuses) == 0 || contains(statuses, a.status)) {
			match = append(match, a)
		}
	}
	sort.Slice(match, func(i, j int) bool { return match[i].id < match[j].id })
	writePage(w, q, "actions", match, actionToJSON)
}

func (e *Emulator) handleGetAction(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "action")
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	a, ok := e.actions[id]
	if !ok {
		notFound(w, "action")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Action actionJSON `json:"action"`
	}{actionToJSON(a)})
}

// --- SSH keys ---

// findSSHKey finds a key by ID or name. Call with e.mu held.
func (e *Emulator) findSSHKey(raw json.RawMessage) *sshKey {
	var id int64
	if err := json.Unmarshal(raw, &id); err == nil {
		return e.sshKeys[id]
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return e.sshKeys[n]
	}
	for _, k := range e.sshKeys {
		if k.name == s {
			return k
		}
	}
	return nil
}

func (e *Emulator) handleCreateSSHKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name      string            `json:"name"`
		PublicKey string            `json:"public_key"`
		Labels    map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "json_error", "invalid JSON in request body")
		return
	}
	var bad []fieldError
	if req.Name == "" {
		bad = append(bad, fieldError{Name: "name", Messages: []string{"is required"}})
	}
	pub, _, opts, rest, err := ssh.ParseAuthorizedKey([]byte(req.PublicKey))
	if err != nil || len(opts) > 0 || strings.TrimSpace(string(rest)) != "" {
		bad = append(bad, fieldError{Name: "public_key", Messages: []string{"invalid public key"}})
	}
	if msgs := checkLabels(req.Labels); msgs != nil {
		bad = append(bad, fieldError{Name: "labels", Messages: msgs})
	}
	if bad != nil {
		writeInvalid(w, bad)
		return
	}
	fp := ssh.FingerprintLegacyMD5(pub)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range e.sshKeys {
		if k.name == req.Name {
			writeError(w, http.StatusConflict, "uniqueness_error", "SSH key with the same name already exists")
			return
		}
		if k.fingerprint == fp {
			writeError(w, http.StatusConflict, "uniqueness_error", "SSH key with the same fingerprint already exists")
			return
		}
	}
	e.nextKey++
	k := &sshKey{
		id: e.nextKey, name: req.Name, fingerprint: fp, publicKey: strings.TrimSpace(req.PublicKey),
		labels: copyLabels(req.Labels), created: e.now().UTC().Truncate(time.Second),
	}
	e.sshKeys[k.id] = k
	writeJSON(w, http.StatusCreated, struct {
		SSHKey sshKeyJSON `json:"ssh_key"`
	}{sshKeyToJSON(k)})
}

func (e *Emulator) handleListSSHKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := parseSelector(q.Get("label_selector"))
	if err != nil {
		writeInvalid(w, []fieldError{{Name: "label_selector", Messages: []string{err.Error()}}})
		return
	}
	name, fp := q.Get("name"), q.Get("fingerprint")
	e.mu.Lock()
	defer e.mu.Unlock()
	var match []*sshKey
	for _, k := range e.sshKeys {
		if (name == "" || k.name == name) && (fp == "" || k.fingerprint == fp) && sel.matches(k.labels) {
			match = append(match, k)
		}
	}
	sort.Slice(match, func(i, j int) bool { return match[i].id < match[j].id })
	writePage(w, q, "ssh_keys", match, sshKeyToJSON)
}

func (e *Emulator) handleGetSSHKey(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "ssh key")
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k, ok := e.sshKeys[id]
	if !ok {
		notFound(w, "ssh key")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		SSHKey sshKeyJSON `json:"ssh_key"`
	}{sshKeyToJSON(k)})
}

func (e *Emulator) handleDeleteSSHKey(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "ssh key")
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.sshKeys[id]; !ok {
		notFound(w, "ssh key")
		return
	}
	delete(e.sshKeys, id)
	w.WriteHeader(http.StatusNoContent)
}

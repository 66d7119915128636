package cloudtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestInjector(t *testing.T) {
	in := New()
	srv := httptest.NewServer(in.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})))
	t.Cleanup(srv.Close)
	get := func(path string) int {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	in.Inject(Fault{Match: "GET /servers/{id}", Count: 2, Status: 503, Body: `{}`})
	for i, want := range []int{503, 200, 503, 200} {
		path := []string{"/servers/1", "/servers", "/servers/22", "/servers/3"}[i]
		if got := get(path); got != want {
			t.Errorf("GET %s = %d, want %d", path, got, want)
		}
	}
	if total, failed := in.Total(); total != 4 || failed != 2 {
		t.Errorf("Total() = %d, %d; want 4, 2", total, failed)
	}
	if c := in.Calls(); c["GET /servers/{id}"] != 3 || c["GET /servers"] != 1 {
		t.Errorf("Calls() = %v", c)
	}
	if r := Route("/api2/json/nodes/pve/tasks/UPID:pve:0001:0002:6B0C:qmstart:101:root@pam:/status"); r != "/api2/json/nodes/pve/tasks/{upid}/status" {
		t.Errorf("Route(task status) = %s", r)
	}
}

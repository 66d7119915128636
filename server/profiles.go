package server

import (
	"net/http"
	"net/http/pprof"
)

// HandleProfiles adds the Go runtime's profiles to mux under /debug/pprof/
// (CPU, heap, goroutine; mutex and block stay empty, as no rate is set):
// the evidence a performance change starts from. Only when the operator
// turns them on (BC_PPROF), since they show the process's internals and
// cost CPU while taken.
func HandleProfiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

package server

import (
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// HandleProfiles adds Go's profiles to mux under /debug/pprof/: CPU, heap,
// goroutine, mutex, block and execution traces of the running process, for
// finding where its time goes (docs/benchmarks.md). Processes add it only
// when BC_PPROF is set: a profile shows the process's internals and costs
// it time while it is taken. It also turns on the mutex and block
// profiles, which are off by default.
func HandleProfiles(mux *http.ServeMux) {
	runtime.SetMutexProfileFraction(100)
	runtime.SetBlockProfileRate(int(time.Millisecond / 10))
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

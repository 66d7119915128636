package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLoopbackFloor is what BenchmarkSubscribers' deliveries cost with
// nothing of ours in them: a child process, standing in for serve, writes
// one 200-byte message to each of n loopback TCP connections per change,
// twice a second as BenchmarkSubscribers changes; this process reads them
// with one goroutine per connection, as that benchmark's clients do, and
// times each from the change's start. The child writes from one goroutine
// per connection woken by a channel, as serve's members are
// (per-connection), or from one goroutine per core walking its share
// (per-core). No websocket, JSON, GraphQL or database: on a machine where
// this floor is near an aim, no server of the same shape meets the aim.
func BenchmarkLoopbackFloor(b *testing.B) {
	for _, c := range []struct {
		n       int
		writers string
	}{{1000, "per-connection"}, {10000, "per-connection"}, {10000, "per-core"}} {
		b.Run(fmt.Sprintf("%d-connections-%s", c.n, c.writers), func(b *testing.B) {
			for range b.N {
				benchFloor(b, c.n, c.writers)
			}
		})
	}
}

// floorMsg is the size of each delivery, about an instanceEvents message's.
const floorMsg = 200

func benchFloor(b *testing.B, n int, writers string) {
	b.StopTimer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	child := exec.Command(os.Args[0], "-test.run", "^$")
	child.Env = append(os.Environ(), "BC_FLOOR_ADDR="+ln.Addr().String(), "BC_FLOOR_N="+strconv.Itoa(n), "BC_FLOOR_WRITERS="+writers)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill() // only if the run below failed: the child ends when ctl closes

	ctl, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer ctl.Close()
	conns := make([]net.Conn, n)
	for i := range conns {
		if conns[i], err = ln.Accept(); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}

	const changes = 10
	var (
		starts [changes]atomic.Int64
		mu     sync.Mutex
		lat    = make([]time.Duration, 0, n*changes)
		read   sync.WaitGroup
	)
	for _, c := range conns {
		read.Go(func() {
			buf := make([]byte, floorMsg)
			local := make([]time.Duration, 0, changes)
			for i := range changes {
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Errorf("read: %v", err)
					break
				}
				local = append(local, time.Since(time.Unix(0, starts[i].Load())))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}

	b.StartTimer()
	cpu0, childCPU0 := pidCPUTime(b, os.Getpid()), pidCPUTime(b, child.Process.Pid)
	tick := time.NewTicker(time.Second / 2)
	for i := range changes {
		<-tick.C
		starts[i].Store(time.Now().UnixNano())
		if _, err := ctl.Write([]byte{1}); err != nil {
			b.Fatal(err)
		}
	}
	tick.Stop()
	read.Wait()
	b.StopTimer()
	cpu, childCPU := pidCPUTime(b, os.Getpid())-cpu0, pidCPUTime(b, child.Process.Pid)-childCPU0
	ctl.Close()
	if err := child.Wait(); err != nil {
		b.Fatalf("writer: %v", err)
	}
	if len(lat) != n*changes {
		b.Fatalf("%d of %d deliveries", len(lat), n*changes)
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(float64(childCPU.Microseconds())/float64(len(lat)), "writer-µs/delivery")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "reader-µs/delivery")
}

// floorWriter is BenchmarkLoopbackFloor's child when BC_FLOOR_ADDR is set:
// it dials the control connection and BC_FLOOR_N others, and writes one
// message to each of them for each byte read from the control
// connection, until it closes.
func floorWriter() error {
	addr := os.Getenv("BC_FLOOR_ADDR")
	n, err := strconv.Atoi(os.Getenv("BC_FLOOR_N"))
	if err != nil {
		return err
	}
	ctl, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer ctl.Close()
	conns := make([]net.Conn, n)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", addr); err != nil {
			return err
		}
		defer conns[i].Close()
	}
	msg := make([]byte, floorMsg)
	write := func(c net.Conn) {
		if _, err := c.Write(msg); err != nil {
			fmt.Fprintln(os.Stderr, "floor writer:", err)
		}
	}
	var change func()
	var wg sync.WaitGroup
	switch w := os.Getenv("BC_FLOOR_WRITERS"); w {
	case "per-connection":
		wake := make([]chan struct{}, n)
		for i, c := range conns {
			wake[i] = make(chan struct{}, 1)
			wg.Go(func() {
				for range wake[i] {
					write(c)
				}
			})
		}
		defer func() {
			for _, ch := range wake {
				close(ch)
			}
			wg.Wait()
		}()
		change = func() {
			for _, ch := range wake {
				ch <- struct{}{}
			}
		}
	case "per-core":
		cores := runtime.GOMAXPROCS(0)
		change = func() {
			for k := range cores {
				wg.Go(func() {
					for i := k; i < n; i += cores {
						write(conns[i])
					}
				})
			}
			wg.Wait()
		}
	default:
		return fmt.Errorf("BC_FLOOR_WRITERS %q", w)
	}
	r := bufio.NewReader(ctl)
	for {
		if _, err := r.ReadByte(); err != nil {
			return nil // the benchmark closed it: done
		}
		change()
	}
}

package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// chaos injects the fault campaign's faults while a load runs: every other
// second it SIGKILLs a reconciler (started again a second later), and as
// the load progresses it injects each one-time fault once. It runs on the
// test's goroutine, so it may fail the test.
type chaos struct {
	c   *cluster
	pg  *postgres
	rng *rand.Rand
	// down are the processes killed, started again on the next tick.
	down []*proc
	// once are the one-time faults, by the share of the load done when
	// they are due; fired counts them.
	once  []fault
	fired int
	// injected counts the faults by kind; last is when the last ended.
	injected map[string]int
	last     time.Time
}

type fault struct {
	at   float64
	kind string
	do   func()
}

func newChaos(c *cluster, pg *postgres) *chaos {
	ch := &chaos{c: c, pg: pg, rng: rand.New(rand.NewPCG(3, uint64(time.Now().UnixNano()))), injected: map[string]int{}}
	ch.once = []fault{
		{0.10, "redis flushed", c.flushRedis},
		{0.20, "host killed", func() { ch.kill(c.hosts[ch.busiest()]) }},
		{0.30, "serve killed", func() { ch.kill(c.serves[1]) }},
		{0.40, "redis restarted", c.restartRedis},
		{0.50, "postgres restarted", func() {
			if err := pg.restart(); err != nil {
				c.t.Fatal(err)
			}
		}},
		{0.60, "serve killed", func() { ch.kill(c.serves[1]) }},
		{0.70, "host killed", func() { ch.kill(c.hosts[ch.busiest()]) }},
		{0.80, "host paused past the silence timeout", func() {
			ch.restartDown()
			i := ch.busiest()
			ch.pause(c.hosts[i], fmt.Sprintf("hv-%d", i))
		}},
	}
	return ch
}

// run injects faults until the load is done.
func (ch *chaos) run(l *campaignLoad) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; !l.finished(); n++ {
		<-tick.C
		ch.restartDown()
		for ch.fired < len(ch.once) && ch.once[ch.fired].at <= l.progress() {
			ch.fire()
		}
		if n%2 == 1 && ch.kill(ch.c.reconcs[ch.rng.IntN(len(ch.c.reconcs))]) {
			ch.injected["reconciler killed"]++
		}
	}
}

// finish injects the one-time faults not yet due (the load may end before
// the ticks saw it reach them) and starts what is down.
func (ch *chaos) finish() {
	for ch.fired < len(ch.once) {
		ch.fire()
	}
	ch.restartDown()
}

func (ch *chaos) fire() {
	f := ch.once[ch.fired]
	ch.fired++
	ch.c.t.Logf("chaos: %s", f.kind)
	f.do()
	ch.injected[f.kind]++
	ch.last = time.Now()
}

// kill SIGKILLs p, unless it is down already; it is started again on the
// next tick.
func (ch *chaos) kill(p *proc) bool {
	if slices.Contains(ch.down, p) {
		return false
	}
	p.signal(syscall.SIGKILL)
	ch.down = append(ch.down, p)
	ch.last = time.Now()
	return true
}

func (ch *chaos) restartDown() {
	for _, p := range ch.down {
		p.start()
	}
	if len(ch.down) > 0 {
		ch.last = time.Now()
	}
	ch.down = nil
}

// pause stops the host process p, named name, until the host counts as
// silent and none of its instances counts as running, then lets it go on.
func (ch *chaos) pause(p *proc, name string) {
	c := ch.c
	p.signal(syscall.SIGSTOP)
	testenv.Eventually(c.t, time.Minute, name+" silent and its instances not RUNNING", func() bool {
		return c.count("hosts WHERE name = $1 AND last_seen_at < now() - make_interval(secs => $2)", name, silentAfter.Seconds()) == 1 &&
			c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE h.name = $1 AND i.state = 'RUNNING'", name) == 0
	})
	lost := c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE h.name = $1 AND i.state = 'LOST'", name)
	live := c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE h.name = $1 AND i.state <> 'DELETED'", name)
	c.t.Logf("chaos: %s silent; %d of its %d instances LOST", name, lost, live)
	p.signal(syscall.SIGCONT)
}

// busiest returns the index of the host with the most instances not
// deleted that is not down: the one whose fault tests the most.
func (ch *chaos) busiest() int {
	best, most := 0, -1
	for i, p := range ch.c.hosts {
		if slices.Contains(ch.down, p) {
			continue
		}
		if n := ch.c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE h.name = $1 AND i.state <> 'DELETED'", fmt.Sprintf("hv-%d", i)); n > most {
			best, most = i, n
		}
	}
	return best
}

func (ch *chaos) total() int {
	n := 0
	for _, k := range ch.injected {
		n += k
	}
	return n
}

package reconciler

import (
	"context"
	"errors"
	"time"
)

// Request names what a kind is asked to look at: the key of a work stream
// entry of its topic (for vps.instances, an instance ID).
type Request struct {
	Topic string
	Key   string
}

// Result says when a key wants looking at again.
type Result struct {
	// Requeue asks for another pass at once: a step was taken and the next
	// may follow.
	Requeue bool
	// RequeueAfter asks for another pass after this long. Returned with an
	// error, it is the least time before the retry (a provider asked us to
	// wait).
	RequeueAfter time.Duration
}

// A Kind reconciles the keys of one work topic, in the shape of
// controller-runtime's reconcilers: one key is never reconciled by two
// workers at once, an error is retried with a backoff per key, and a
// Terminal error is logged and not retried.
type Kind interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// KindFunc is a Kind made of a function.
type KindFunc func(ctx context.Context, req Request) (Result, error)

// Reconcile calls f.
func (f KindFunc) Reconcile(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

// terminalError is an error that retrying will not mend.
type terminalError struct{ err error }

func (e terminalError) Error() string { return "terminal: " + e.err.Error() }
func (e terminalError) Unwrap() error { return e.err }

// Terminal marks err as one that retrying will not mend, such as a key that
// can never name an object: the work entry is dropped.
func Terminal(err error) error { return terminalError{err} }

// IsTerminal reports whether err was marked Terminal.
func IsTerminal(err error) bool { return errors.As(err, new(terminalError)) }

// Register routes the work entries of topic to k: the relay hands the
// topic's outbox rows to the work stream, and the workers call k for each
// entry. Call it before Run.
func (r *Reconciler) Register(topic string, k Kind) {
	if r.kinds == nil {
		r.kinds = map[string]Kind{}
	}
	r.kinds[topic] = k
}

// Every runs fn once per interval across all reconciler processes sharing
// the database: whichever process claims the interval first runs it. Call
// it before Run.
func (r *Reconciler) Every(name string, interval time.Duration, fn func(context.Context) error) {
	r.periodic = append(r.periodic, periodic{name: name, interval: interval, run: fn})
}

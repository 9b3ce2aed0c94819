package elect

import (
	"context"
	"time"
)

// Backend is one host's part in one instance's election, whatever keeps
// the lease: the shared directory of this package's Election (New), or
// another store of leases behind the same promises (docs/semantics.md,
// "Floating plugins: the election"). A floating placement runs its plugins
// through it alone.
type Backend interface {
	// Campaign returns once this host leads, with its term.
	Campaign(ctx context.Context) (Leadership, error)
	// Observe reports the lease as a follower sees it, at every change.
	Observe(ctx context.Context) <-chan Observation
	// Leader reads the lease once, with how long it has looked unchanged.
	Leader(ctx context.Context) (Lease, time.Duration, error)
	// Following reports whether a campaign follows a healthy leader.
	Following() bool
	// Problem is why this host cannot take part in the election now, when
	// it knows one (a lease it may not read); nil otherwise.
	Problem() error
	// Close stops every goroutine the backend started.
	Close()
}

// Leadership is one term of this host, as a Backend's Campaign returns it.
type Leadership interface {
	// Epoch is the term's fencing token: it grows with every term, across
	// all hosts; the plugin runs with it as its generation.
	Epoch() int64
	// Lost is closed when the term can no longer be kept.
	Lost() <-chan struct{}
	// Err says why Lost was closed.
	Err() error
	// Deadline is when the plugin must be confirmed gone, should the term
	// not be kept from now on: another host may lead from then on.
	Deadline() time.Time
	// Renewed is when the last successful renewal began, and Handover
	// what else a program that takes the term back after an exec needs
	// (Resumer): nothing on the file backend, the lease and the key on
	// etcd.
	Renewed() time.Time
	Handover() string
	// Resign releases the lease after the plugin has stopped.
	Resign(ctx context.Context) error
	// Close stops keeping the term without releasing it.
	Close()
}

var _ Leadership = (*Term)(nil)

// file is the shared-directory Election as a Backend.
type file struct{ *Election }

// Backend is e as a Backend.
func (e *Election) Backend() Backend { return file{e} }

func (f file) Campaign(ctx context.Context) (Leadership, error) {
	t, err := f.Election.Campaign(ctx)
	if t == nil {
		return nil, err // not a typed nil in the interface
	}
	return t, err
}

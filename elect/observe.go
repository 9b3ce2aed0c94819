package elect

import (
	"context"
	"time"
)

// Observation is the lease as this host sees it.
type Observation struct {
	// Lease is the last lease read (kept while reads fail).
	Lease Lease
	// Age is how long the lease file has looked unchanged to this host.
	Age time.Duration
	// Dead: the leader released the lease, or its file has been frozen
	// (or its reads failed) for longer than ttl. Some host's Campaign takes
	// over. A lease this host may not read (UnreadableError) is not dead.
	Dead bool
}

// Observe reports the lease as a follower sees it, reading it now and then
// every poll: the first lease read, every change of leader (epoch, holder
// or address), and every change of Dead. Changes between two polls collapse
// into the last; a read that fails reports nothing and counts as no change.
// The host restarts its consumers of the plugin with the new Lease.Address
// when the epoch changes (docs/semantics.md, "Floating plugins: the
// election").
//
// Observations are sent unbuffered and in order; a receiver that stops
// reading stalls the observer. Cancelling ctx (or closing the election)
// stops it and closes the channel.
func (e *Election) Observe(ctx context.Context) <-chan Observation {
	return Stream(ctx, e.ctx, e.goroutine, e.observe)
}

// Stream is the channel an election's Observe returns: observe runs on a
// goroutine of the election's (spawn, which refuses once the election is
// closed, and then the channel is closed at once), with a context that
// ends with ctx or the election's (Join), and the channel is closed when
// observe returns. Both backends observe through it.
func Stream[T any](ctx, election context.Context, spawn func(func()) bool, observe func(context.Context, chan<- T)) <-chan T {
	ch := make(chan T)
	ctx, stop := Join(ctx, election)
	if !spawn(func() {
		defer stop()
		defer close(ch)
		observe(ctx, ch)
	}) {
		stop()
		close(ch)
	}
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- Observation) {
	var last *Observation
	for first := true; ; first = false {
		if !first && Sleep(ctx, e.cfg.Clock, e.cfg.Poll) != nil {
			return
		}
		s := e.look()
		if !s.seen {
			continue
		}
		o := Observation{Lease: s.lease, Age: s.age, Dead: e.dead(s)}
		if last != nil && !changed(*last, o) {
			continue
		}
		select {
		case ch <- o:
			last = &o
		case <-ctx.Done():
			return
		}
	}
}

func changed(a, b Observation) bool {
	return a.Dead != b.Dead || a.Lease.Epoch != b.Lease.Epoch ||
		a.Lease.Holder != b.Lease.Holder || a.Lease.Address != b.Lease.Address
}

// Leader reads the lease once: who leads, where, which epoch, and how long
// its file has looked unchanged to this host (zero on this election's first
// look: a host that just started has no history). Use Observe, or the
// lease's Released, to know whether that leader is alive.
//
// ctx is checked before the read; a read blocked on a hung share is not
// interrupted.
func (e *Election) Leader(ctx context.Context) (Lease, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, 0, err
	}
	s := e.look()
	if s.err != nil {
		return Lease{}, 0, s.err
	}
	return s.lease, s.age, nil
}

// Problem is why this host cannot take part in the election now: the
// lease exists but this host may not read it (an *UnreadableError), as its
// last look found; nil otherwise. The host shows it in graft status.
func (e *Election) Problem() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.problem
}

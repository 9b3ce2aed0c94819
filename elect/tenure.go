package elect

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Tenure is the lifetime of one term, the same whatever keeps its lease:
// the goroutine that renews the lease every renew, Lost and why, the
// deadline the last successful renewal sets, and Resign and Close, which
// stop that goroutine and wait for it (docs/semantics.md, "Floating
// plugins: the election", and its "On etcd"). How the lease is renewed and
// released is the backend's: the functions of its TenureConfig. The file
// backend's Term and the etcd backend's term are each one Tenure.
type Tenure struct {
	cfg TenureConfig

	cancel context.CancelFunc
	done   chan struct{} // closed when renewal has stopped
	lost   chan struct{}
	err    error // why lost; written before lost is closed

	mu sync.Mutex // serializes Resign and Close

	renewedMu sync.Mutex
	renewed   time.Time // when the last successful renewal began
}

// TenureConfig is what a backend tells a Tenure about one term.
type TenureConfig struct {
	// Epoch is the term's epoch.
	Epoch int64
	// Began is when the write that took the lease began (on etcd, the
	// keepalive after the campaign): the first renewal is due Renew later.
	Began time.Time
	// Clock, Renew and TTL are the election's: another host may lead TTL
	// after the last successful renewal began.
	Clock      Clock
	Renew, TTL time.Duration
	// RenewOnce renews the lease once, giving up at deadline, when the
	// renewal after it is due; an error loses the term, and is its Err.
	RenewOnce func(deadline time.Time) error
	// Release gives the lease up for Resign, once renewal has stopped,
	// unless the term was lost. Resign wraps its error.
	Release func(ctx context.Context) error
	// Abandon, unless nil, stops whatever else keeps the lease alive (etcd's
	// session): when the term is lost, before Lost is closed, and at Close.
	Abandon func()
}

// NewTenure is the tenure of cfg's term; it renews nothing until Start.
func NewTenure(cfg TenureConfig) *Tenure {
	return &Tenure{cfg: cfg, done: make(chan struct{}), lost: make(chan struct{}), renewed: cfg.Began}
}

// Start starts renewing on a goroutine that spawn runs (the election's,
// which its Close waits for), until ctx ends, Resign or Close. It returns
// false, running nothing, when spawn refuses (the election is closed).
// Call it once.
func (t *Tenure) Start(ctx context.Context, spawn func(func()) bool) bool {
	ctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	if !spawn(func() { t.renewLoop(ctx) }) {
		cancel()
		close(t.done)
		return false
	}
	return true
}

// Epoch is the term's epoch.
func (t *Tenure) Epoch() int64 { return t.cfg.Epoch }

// Lost is closed when a renewal failed or began too late (ErrLate).
// Renewal has stopped by then, Abandon has run, and the term writes
// nothing more. Resign and Close do not close Lost.
func (t *Tenure) Lost() <-chan struct{} { return t.lost }

// Err says why the term was lost; nil while Lost is open.
func (t *Tenure) Err() error {
	select {
	case <-t.lost:
		return t.err
	default:
		return nil
	}
}

// Renewed is when the last successful renewal began (or the write that
// took the lease), on the election's clock.
func (t *Tenure) Renewed() time.Time {
	t.renewedMu.Lock()
	defer t.renewedMu.Unlock()
	return t.renewed
}

// Deadline is ttl after Renewed: no other host leads before it.
func (t *Tenure) Deadline() time.Time { return t.Renewed().Add(t.cfg.TTL) }

// renewLoop renews the lease renew after the last successful renewal
// began. A renewal that has not succeeded when the next one is due, renew
// later, is given up on, and the term is lost: its leader then has ttl −
// 2 × renew to stop its plugin.
func (t *Tenure) renewLoop(ctx context.Context) {
	defer close(t.done)
	clk, renew := t.cfg.Clock, t.cfg.Renew
	for {
		due := t.Renewed().Add(renew)
		if Sleep(ctx, clk, due.Sub(clk.Now())) != nil {
			return
		}
		began := clk.Now()
		next := due.Add(renew)
		var err error
		if late := began.Sub(next); late >= 0 {
			// Woken past the next renewal: this host (or this process) was
			// held up, frozen or starved, and another may lead soon.
			err = fmt.Errorf("renew epoch %d: %w: due %s ago", t.cfg.Epoch, ErrLate, (late + renew).Round(time.Millisecond))
		} else {
			err = t.cfg.RenewOnce(next)
		}
		if err != nil {
			t.abandon()
			t.err = err
			close(t.lost)
			return
		}
		t.renewedMu.Lock()
		t.renewed = began
		t.renewedMu.Unlock()
	}
}

func (t *Tenure) abandon() {
	if t.cfg.Abandon != nil {
		t.cfg.Abandon()
	}
}

// stop ends renewal and waits for it.
func (t *Tenure) stop() {
	t.cancel()
	<-t.done
}

// Resign stops renewing and waits for it, then releases the lease with
// Release. It returns ErrNotLeader, wrapping why, when the term was lost.
func (t *Tenure) Resign(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop()
	select {
	case <-t.lost:
		return fmt.Errorf("resign: %w: %w", ErrNotLeader, t.err)
	default:
	}
	if err := t.cfg.Release(ctx); err != nil {
		return fmt.Errorf("resign: %w", err)
	}
	return nil
}

// Close stops renewing and waits for it, then runs Abandon, without
// releasing the lease, as a crash would. Close and Resign may be called
// more than once.
func (t *Tenure) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop()
	t.abandon()
}

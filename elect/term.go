package elect

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Term is one leadership of this host: the epoch it won and the goroutine
// that renews the lease every renew (docs/semantics.md, "Floating plugins:
// the election"). Like etcd's Session, it owns that goroutine: Resign and
// Close stop it and wait for it.
type Term struct {
	e     *Election
	epoch int64
	// won is when this host took the lease, on its clock; tests measure
	// takeovers with it.
	won time.Time

	cancel context.CancelFunc
	done   chan struct{} // closed when renewal has stopped
	lost   chan struct{}
	err    error // why lost; written before lost is closed

	mu    sync.Mutex // serializes Resign and Close
	lease Lease      // as last written; the renewal goroutine owns it until done

	renewedMu sync.Mutex
	renewed   time.Time // when the last successful renewal began
}

// startTerm starts renewing l, written by a write that began at began.
func (e *Election) startTerm(l Lease, began time.Time) (*Term, error) {
	ctx, cancel := context.WithCancel(e.ctx)
	t := &Term{
		e:       e,
		epoch:   l.Epoch,
		won:     e.cfg.Clock.Now(),
		cancel:  cancel,
		done:    make(chan struct{}),
		lost:    make(chan struct{}),
		lease:   l,
		renewed: began,
	}
	if !e.goroutine(func() { t.renewLoop(ctx) }) {
		cancel()
		return nil, ErrClosed
	}
	return t, nil
}

// Epoch is the term's epoch; the host starts the plugin with it as the
// generation.
func (t *Term) Epoch() int64 { return t.epoch }

// Lost is closed when the leader can no longer renew: a read or write of
// the lease failed or did not finish before the next renewal was due
// (ErrHung), or the lease holds a newer term. Renewal has stopped by then and
// the term writes nothing more. The host stops its process at once (stop
// first, then give up, never two leaders by its own hand:
// docs/semantics.md) and then may Campaign again: followers take over ttl
// after the last renewal. Resign and Close do not close Lost.
func (t *Term) Lost() <-chan struct{} { return t.lost }

// Err says why the term was lost (wrapping ErrSuperseded or the write
// error); nil while Lost is open.
func (t *Term) Err() error {
	select {
	case <-t.lost:
		return t.err
	default:
		return nil
	}
}

// Renewed is when the last successful renewal began (or the write that
// took the lease), on the election's clock. Followers see the lease
// change no earlier, so none takes over before Renewed + ttl.
func (t *Term) Renewed() time.Time {
	t.renewedMu.Lock()
	defer t.renewedMu.Unlock()
	return t.renewed
}

// Deadline is ttl after Renewed: the time by which a leader whose
// renewals stopped succeeding must have confirmed its plugin gone, since
// another host may lead from then on (docs/semantics.md, "Floating
// plugins: the election").
func (t *Term) Deadline() time.Time { return t.Renewed().Add(t.e.cfg.TTL) }

// renewLoop rewrites the lease renew after the last successful renewal
// began, bumping renewCount, so its mtime moves (the heartbeat followers
// watch). A renewal that has not succeeded when the next one is due, renew
// later, is given up on, and the term is lost: its leader then has ttl −
// 2 × renew to stop its plugin.
func (t *Term) renewLoop(ctx context.Context) {
	defer close(t.done)
	clk := t.e.cfg.Clock
	for {
		due := t.Renewed().Add(t.e.cfg.Renew)
		if Sleep(ctx, clk, due.Sub(clk.Now())) != nil {
			return
		}
		began := clk.Now()
		next := due.Add(t.e.cfg.Renew)
		if late := began.Sub(next); late >= 0 {
			// Woken past the next renewal: this host (or this process) was
			// held up, frozen or starved, and others may take over soon.
			t.err = fmt.Errorf("renew epoch %d: %w: due %s ago", t.epoch, ErrLate, (late + t.e.cfg.Renew).Round(time.Millisecond))
			close(t.lost)
			return
		}
		if err := t.renew(next); err != nil {
			t.err = err
			close(t.lost)
			return
		}
		t.renewedMu.Lock()
		t.renewed = began
		t.renewedMu.Unlock()
	}
}

// renew reads the lease first: a newer term in it ends this one without a
// write (after a split brain the lower epoch steps down). A lease that is
// missing or unreadable proves no newer term, so it is rewritten with this
// epoch: a read on a flaky share does not demote. A failed write does: a
// leader that cannot write the lease steps down and bootstraps again
// (docs/semantics.md, "Floating plugins: the election").
//
// The lock is not taken: it is held only while the lease is taken. A
// contender writing between the read and the rename is overwritten once; it
// finds this lower epoch at its next renewal and rewrites its own, and this
// term then finds it and ends.
//
// The read and the write give up at deadline; a hung read demotes, unlike
// a failed one, since the write after it would hang as well.
func (t *Term) renew(deadline time.Time) error {
	st, err := t.e.readBy(deadline)
	if errors.Is(err, ErrHung) {
		return fmt.Errorf("renew epoch %d: %w", t.epoch, err)
	}
	if err == nil {
		t.e.noteEpoch(st.lease.Epoch)
		if st.lease.supersedes(t.lease) {
			return fmt.Errorf("renew epoch %d: %w (epoch %d held by %q)", t.epoch, ErrSuperseded, st.lease.Epoch, st.lease.Holder)
		}
	}
	next := t.lease
	next.RenewCount++
	if err := t.e.writeLease(next, deadline); err != nil {
		return fmt.Errorf("renew epoch %d: %w", t.epoch, err)
	}
	t.lease = next
	return nil
}

// stop ends renewal and waits for it.
func (t *Term) stop() {
	t.cancel()
	<-t.done
}

// Resign stops renewing and marks the lease released, if it still holds
// this term, so a follower takes over within one poll instead of ttl.
// Call it after the plugin has stopped. It returns ErrNotLeader (wrapping
// the reason) when the term was lost or the lease holds a newer term.
//
// ctx is checked once renewal has stopped, before the lease is read and
// written: a cancelled ctx leaves the lease unreleased (as Close does).
// The read and the write each give up after renew; ctx does not interrupt
// them.
func (t *Term) Resign(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop()
	select {
	case <-t.lost:
		return fmt.Errorf("resign: %w: %w", ErrNotLeader, t.err)
	default:
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("resign: %w", err)
	}
	// A missing or unreadable lease proves no newer term: it is released,
	// as renew would rewrite it.
	if st, err := t.e.readBy(t.e.ioDeadline()); err == nil && st.lease.supersedes(t.lease) {
		return fmt.Errorf("resign: %w: epoch %d held by %q", ErrNotLeader, st.lease.Epoch, st.lease.Holder)
	}
	l := t.lease
	l.RenewCount++
	l.Released = true
	if err := t.e.writeLease(l, t.e.ioDeadline()); err != nil {
		return fmt.Errorf("resign: %w", err)
	}
	t.lease = l
	return nil
}

// Close stops renewing without releasing the lease, as a crash would:
// followers take over once the file has been frozen for ttl. It is for a
// host that must not write the share any more; tests use it to simulate a
// crashed leader. Close and Resign may be called more than once.
func (t *Term) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop()
}

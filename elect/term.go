package elect

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Term is one leadership of this host: the epoch it won and the goroutine
// that renews the lease every renew (docs/semantics.md, "Floating plugins:
// the election"), a Tenure whose renewals rewrite the lease file. Like
// etcd's Session, it owns that goroutine: Resign and Close stop it and wait
// for it.
type Term struct {
	tenure *Tenure
	e      *Election
	// won is when this host took the lease, on its clock; tests measure
	// takeovers with it.
	won   time.Time
	lease Lease // as last written; the renewal goroutine owns it until done, then Resign
}

// startTerm starts renewing l, written by a write that began at began.
func (e *Election) startTerm(l Lease, began time.Time) (*Term, error) {
	t := &Term{e: e, won: e.cfg.Clock.Now(), lease: l}
	t.tenure = NewTenure(TenureConfig{
		Epoch: l.Epoch, Began: began,
		Clock: e.cfg.Clock, Renew: e.cfg.Renew, TTL: e.cfg.TTL,
		RenewOnce: t.renew, Release: t.release,
	})
	if !t.tenure.Start(e.ctx, e.goroutine) {
		return nil, ErrClosed
	}
	return t, nil
}

// Epoch is the term's epoch; the host starts the plugin with it as the
// generation.
func (t *Term) Epoch() int64 { return t.tenure.Epoch() }

// Lost is closed when the leader can no longer renew: a read or write of
// the lease failed or did not finish before the next renewal was due
// (ErrHung), the renewal began too late (ErrLate), or the lease holds a
// newer term. Renewal has stopped by then and the term writes nothing
// more. The host stops its process at once (stop first, then give up,
// never two leaders by its own hand: docs/semantics.md) and then may
// Campaign again: followers take over ttl after the last renewal. Resign
// and Close do not close Lost.
func (t *Term) Lost() <-chan struct{} { return t.tenure.Lost() }

// Err says why the term was lost (wrapping ErrSuperseded or the write
// error); nil while Lost is open.
func (t *Term) Err() error { return t.tenure.Err() }

// Renewed is when the last successful renewal began (or the write that
// took the lease), on the election's clock. Followers see the lease
// change no earlier, so none takes over before Renewed + ttl.
func (t *Term) Renewed() time.Time { return t.tenure.Renewed() }

// Deadline is ttl after Renewed: the time by which a leader whose
// renewals stopped succeeding must have confirmed its plugin gone, since
// another host may lead from then on (docs/semantics.md, "Floating
// plugins: the election").
func (t *Term) Deadline() time.Time { return t.tenure.Deadline() }

// renew rewrites the lease once, bumping renewCount, so its mtime moves
// (the heartbeat followers watch). It reads the lease first: a newer term
// in it ends this one without a write (after a split brain the lower epoch
// steps down). A lease that is missing or unreadable proves no newer term,
// so it is rewritten with this epoch: a read on a flaky share does not
// demote. A failed write does: a leader that cannot write the lease steps
// down and bootstraps again (docs/semantics.md, "Floating plugins: the
// election").
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
	if errors.Is(err, ErrHung) || unreadable(err) {
		return fmt.Errorf("renew epoch %d: %w", t.Epoch(), err)
	}
	if err == nil {
		t.e.noteEpoch(st.lease.Epoch)
		if st.lease.supersedes(t.lease) {
			return fmt.Errorf("renew epoch %d: %w (epoch %d held by %q)", t.Epoch(), ErrSuperseded, st.lease.Epoch, st.lease.Holder)
		}
	}
	next := t.lease
	next.RenewCount++
	if err := t.e.writeLease(next, deadline); err != nil {
		return fmt.Errorf("renew epoch %d: %w", t.Epoch(), err)
	}
	t.lease = next
	return nil
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
func (t *Term) Resign(ctx context.Context) error { return t.tenure.Resign(ctx) }

// release is Resign's part once renewal has stopped and the term was not
// lost.
func (t *Term) release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A missing lease, or a failed read, proves no newer term: it is
	// released, as renew would rewrite it.
	st, err := t.e.readBy(t.e.ioDeadline())
	if err == nil && st.lease.supersedes(t.lease) {
		return fmt.Errorf("%w: epoch %d held by %q", ErrNotLeader, st.lease.Epoch, st.lease.Holder)
	}
	if unreadable(err) { // another user's host wrote it: not this term's to release
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	l := t.lease
	l.RenewCount++
	l.Released = true
	if err := t.e.writeLease(l, t.e.ioDeadline()); err != nil {
		return err
	}
	t.lease = l
	return nil
}

// Close stops renewing without releasing the lease, as a crash would:
// followers take over once the file has been frozen for ttl. It is for a
// host that must not write the share any more; tests use it to simulate a
// crashed leader. Close and Resign may be called more than once.
func (t *Term) Close() { t.tenure.Close() }

package elect

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Campaign returns once this host leads, with its term. Until then it runs
// the state machine of docs/semantics.md, "Floating plugins: the election":
// BOOTSTRAP reads the lease; a healthy leader makes this host a FOLLOWER,
// which polls until that leader is dead (released, or its file frozen past
// ttl); otherwise it CONTENDs: take the lock, re-read the lease, and if
// there is still no healthy leader write epoch+1 and drop the lock. A
// contender that loses waits the herd backoff and bootstraps again. I/O
// errors on the share are retried the same way. A lease that exists but
// that this host may not read (UnreadableError) is never taken for absent
// or free: the campaign does not contend, and reads it again every poll
// (Problem reports it meanwhile).
//
// Cancelling ctx ends the wait: Campaign returns ctx's error (with the last
// I/O error, if any, for the log). Once the lease is written the term is
// returned even if ctx ended meanwhile; ctx does not bound the term (Resign
// and Close do). It returns ErrClosed if the election is closed, and an
// *ExhaustedError at once when the next epoch would be past math.MaxInt64.
//
// A host calls Campaign only while it holds no term of this election: a
// second campaign would take its own lease from it.
func (e *Election) Campaign(ctx context.Context) (*Term, error) {
	ctx, stop := Join(ctx, e.ctx)
	defer stop()
	var lastErr error
	for {
		if ctx.Err() != nil {
			return nil, e.ended(ctx, lastErr)
		}
		s := e.look()
		if unreadable(s.err) {
			// Not absent, not free: another host may lead through it.
			lastErr = s.err
			if Sleep(ctx, e.cfg.Clock, e.cfg.Poll) != nil {
				return nil, e.ended(ctx, lastErr)
			}
			continue
		}
		if e.healthy(s) {
			if err := e.follow(ctx); err != nil {
				return nil, e.ended(ctx, lastErr)
			}
			continue // the leader is dead: bootstrap again, which contends
		}
		t, err := e.contend(ctx)
		if t != nil {
			return t, nil
		}
		var exhausted *ExhaustedError
		if errors.As(err, &exhausted) {
			return nil, err
		}
		if err != nil && !errors.Is(err, errLockBusy) {
			lastErr = err
		}
		if Sleep(ctx, e.cfg.Clock, e.backoff) != nil {
			return nil, e.ended(ctx, lastErr)
		}
	}
}

func (e *Election) ended(ctx context.Context, lastErr error) error {
	if lastErr != nil {
		return fmt.Errorf("campaign: %w (last error: %w)", context.Cause(ctx), lastErr)
	}
	return context.Cause(ctx)
}

// Following reports whether a campaign follows a healthy leader: it is
// neither bootstrapping, contending, nor waiting out its herd backoff.
// Only a follower waits a whole ttl before it takes over from a leader
// that died.
func (e *Election) Following() bool { return e.following.Load() }

// follow polls the lease every poll until its leader is dead. A new epoch
// is simply followed: Observe is what reports it to the host.
func (e *Election) follow(ctx context.Context) error {
	e.following.Store(true)
	defer e.following.Store(false)
	for {
		if err := Sleep(ctx, e.cfg.Clock, e.cfg.Poll); err != nil {
			return err
		}
		if s := e.look(); e.dead(s) || unreadable(s.err) {
			return nil // bootstrap again: it contends, or waits for a readable lease
		}
	}
}

// contend takes the lease if, inside the lock, there is still no healthy
// leader. It returns (nil, nil) when it found one, and errLockBusy when
// another host holds the lock.
func (e *Election) contend(ctx context.Context) (*Term, error) {
	release, err := e.takeLock()
	if err != nil {
		return nil, err
	}
	defer release()
	s := e.look()
	if unreadable(s.err) {
		return nil, s.err
	}
	if e.healthy(s) || ctx.Err() != nil {
		return nil, nil
	}
	// The epoch only grows: also past what this host saw before, should the
	// file have been deleted or left unreadable; and never wraps.
	e.mu.Lock()
	last := e.maxEpoch
	e.mu.Unlock()
	if last == math.MaxInt64 {
		return nil, &ExhaustedError{Instance: e.cfg.Instance, Dir: e.cfg.Dir}
	}
	epoch := last + 1
	l := Lease{Holder: e.cfg.HostID, Address: e.cfg.Address, Epoch: epoch}
	// The term counts from the moment the write began: others may see the
	// lease from then on, and measure its ttl from when they do.
	began := e.cfg.Clock.Now()
	if err := e.writeLease(l, began.Add(e.cfg.Renew)); err != nil {
		return nil, err
	}
	t, err := e.startTerm(l, began)
	if err != nil {
		// Closed while taking the lease: nobody will renew it, so hand it on.
		l.RenewCount, l.Released = 1, true
		_ = e.writeLease(l, e.ioDeadline())
		return nil, err
	}
	return t, nil
}

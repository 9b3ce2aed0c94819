package elect

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"time"
)

// sighting is what this host knows of the lease after one look.
type sighting struct {
	lease Lease         // the last lease read; zero if none ever was
	seen  bool          // a lease was read at least once
	err   error         // this look's read error, if any
	age   time.Duration // how long the file has looked unchanged to this host
	// witnessed: the lease was written after an earlier look of this
	// host learned the file's state (read another lease, or found none),
	// so age falls short of its true age by at most the time between
	// those looks: it errs toward a live leader, never a dead one.
	witnessed bool
}

// look reads the lease and updates the freshness tracker: the file's age is
// the time, on this host's clock, since this host first saw its current
// mtime and content. The mtime is compared only with earlier mtimes of the
// same file, never with a clock, so hosts whose clocks disagree agree on
// freshness (docs/semantics.md, "Floating plugins: the election": freshness
// never compares clocks across machines). A failed read changes nothing, so
// a share that stays unreadable makes the lease look frozen; one that comes
// back within ttl does not: a failed poll is simply tried again at the
// next. A lease that exists but may not be read (UnreadableError) is
// neither: the campaign waits for it to become readable (Campaign).
func (e *Election) look() sighting {
	e.readMu.Lock()
	defer e.readMu.Unlock()
	st, err := e.readBy(e.ioDeadline())
	now := e.cfg.Clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		if !e.seen || !st.same(e.last) {
			e.seen, e.last, e.changedAt, e.witnessed = true, st, now, e.knew
		}
		e.maxEpoch = max(e.maxEpoch, st.lease.Epoch)
	}
	e.knew = e.knew || err == nil || errors.Is(err, fs.ErrNotExist)
	e.problem = nil
	if unreadable(err) {
		e.problem = err
	}
	s := sighting{lease: e.last.lease, seen: e.seen, err: err, witnessed: e.witnessed}
	if e.seen {
		s.age = now.Sub(e.changedAt)
	}
	return s
}

// dead reports whether a leader seen this way has ended: it released the
// lease, or its file has not changed for longer than ttl. A lease this
// host may not read now proves neither.
func (e *Election) dead(s sighting) bool {
	return s.seen && !unreadable(s.err) && (s.lease.Released || s.age > e.cfg.TTL)
}

// healthy reports whether s shows a leader to follow rather than contend
// with: a lease that is not released, not frozen past ttl, not this host's
// own (left by its previous run), and either witnessed (its history says
// its leader wrote it less than ttl ago) or, for a lease that was there
// before this host first knew the file, whose address answers: the TCP
// connect stands in for the missing history (docs/semantics.md, "Floating
// plugins: the election"). A read that fails changes nothing: the lease
// last read, and its history, stand.
//
// A witnessed lease is never dialled: a leader whose plugin still starts
// (or restarts) does not answer, and taking its lease then would start a
// second plugin beside its own until its next renewal. For the same
// reason a leader not yet renewed (renewCount 0), seen unchanged for at
// most one renew, need not answer: it was elected a moment ago.
func (e *Election) healthy(ctx context.Context, s sighting) bool {
	if !s.seen || e.dead(s) || s.lease.Holder == e.cfg.HostID {
		return false
	}
	if s.witnessed || s.lease.RenewCount == 0 && s.age <= e.cfg.Renew {
		return true
	}
	return e.cfg.Dial(ctx, s.lease.Address) == nil
}

func dialTCP(ctx context.Context, address string) error {
	d := net.Dialer{Timeout: DialTimeout}
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return err
	}
	return c.Close()
}

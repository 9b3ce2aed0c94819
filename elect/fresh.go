package elect

import (
	"errors"
	"io/fs"
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
// with: a lease that is not released, not frozen past ttl, and not this
// host's own (left by its previous run). A host that has just started,
// with no history of a lease it finds there, follows it as any other
// host does (docs/semantics.md, "Floating plugins: the election"): a
// live leader renews it, and one that does not has lost its term but may
// still be stopping its plugin until ttl after its last renewal, which is
// no later than when this host first saw the lease. Nothing is dialled: a
// leader whose plugin is restarting does not answer, and taking its lease
// then started a second plugin beside its own. A read that fails changes
// nothing: the lease last read, and its history, stand.
func (e *Election) healthy(s sighting) bool {
	return s.seen && !e.dead(s) && s.lease.Holder != e.cfg.HostID
}

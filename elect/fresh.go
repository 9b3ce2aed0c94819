package elect

import (
	"context"
	"net"
	"time"
)

// sighting is what this host knows of the lease after one look.
type sighting struct {
	lease Lease         // the last lease read; zero if none ever was
	seen  bool          // a lease was read at least once
	err   error         // this look's read error, if any
	age   time.Duration // how long the file has looked unchanged to this host
}

// look reads the lease and updates the freshness tracker: the file's age is
// the time, on this host's clock, since this host first saw its current
// mtime and content. The mtime is compared only with earlier mtimes of the
// same file, never with a clock, so hosts whose clocks disagree agree on
// freshness (docs/semantics.md, "Floating plugins: the election": freshness
// never compares clocks across machines). A failed read changes nothing, so
// a share that stays unreadable makes the lease look frozen; one that comes
// back within ttl does not: a failed poll is simply tried again at the
// next.
func (e *Election) look() sighting {
	e.readMu.Lock()
	defer e.readMu.Unlock()
	st, err := e.readBy(e.ioDeadline())
	now := e.cfg.Clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		if !e.seen || !st.same(e.last) {
			e.seen, e.last, e.changedAt = true, st, now
		}
		e.maxEpoch = max(e.maxEpoch, st.lease.Epoch)
	}
	s := sighting{lease: e.last.lease, seen: e.seen, err: err}
	if e.seen {
		s.age = now.Sub(e.changedAt)
	}
	return s
}

// dead reports whether a leader seen this way has ended: it released the
// lease, or its file has not changed for longer than ttl.
func (e *Election) dead(s sighting) bool {
	return s.seen && (s.lease.Released || s.age > e.cfg.TTL)
}

// healthy reports whether s shows a leader to follow rather than contend
// with: this look read a lease that is not released, not frozen past ttl (a
// host that just started has no history: age zero), not this host's own
// (left by its previous run), and whose address answers (at bootstrap a TCP
// connect stands in for the missing mtime history; docs/semantics.md,
// "Floating plugins: the election").
//
// A leader not yet renewed (renewCount 0), seen unchanged for at most one
// renew, need not answer yet: it was elected a moment ago and its plugin is
// starting. Probing it at once would let a host that bootstraps while the
// new leader's process starts take the lease from it, and the leader demote
// at its first renewal: needless churn at every cold start.
func (e *Election) healthy(ctx context.Context, s sighting) bool {
	if s.err != nil || e.dead(s) || s.lease.Holder == e.cfg.HostID {
		return false
	}
	if s.lease.RenewCount == 0 && s.age <= e.cfg.Renew {
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

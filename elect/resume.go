package elect

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A host that replaces its program in place (graft upgrade) keeps the
// terms it holds: its plugin runs on, adopted by the new program, which
// takes the term back with the same epoch instead of campaigning for a
// new one (docs/upgrade.md). Nothing renews the lease between the old
// program's exec and the new one's resumption, so the new program must
// know when the old one last renewed: it resumes only well inside the
// ttl, before any follower may take over.

// ErrNotResumable is why a term could not be taken back: the lease no
// longer holds this host and epoch, was released, or its last renewal is
// too long ago.
var ErrNotResumable = errors.New("the term cannot be resumed")

// Resumer is a Backend that can take back a term of this host's from
// before an exec of a new program.
type Resumer interface {
	// Resume takes back the term of epoch that this host held, last
	// renewed at renewed (on the election's clock), with what its
	// Leadership's Handover said: it returns the term, renewing from now
	// on, or an error wrapping ErrNotResumable.
	Resume(ctx context.Context, epoch int64, renewed time.Time, handover string) (Leadership, error)
}

var _ Resumer = file{}

// Handover is nothing: the file backend's term is its epoch and lease
// file alone.
func (t *Term) Handover() string { return "" }

func (f file) Resume(ctx context.Context, epoch int64, renewed time.Time, _ string) (Leadership, error) {
	t, err := f.Election.Resume(ctx, epoch, renewed)
	if t == nil {
		return nil, err
	}
	return t, nil
}

// Resume takes back the term of epoch that this host held, last renewed
// at renewed: the lease must hold this host and epoch, not released, and
// renewed be less than ttl minus renew ago (a follower takes over a ttl
// after the last renewal; the margin is the new term's first renewal's).
// The lease is renewed at once, and then every renew, as after a
// campaign. It returns an error wrapping ErrNotResumable otherwise,
// having written nothing: the host then campaigns, for a new epoch.
func (e *Election) Resume(ctx context.Context, epoch int64, renewed time.Time) (*Term, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := e.cfg.Clock.Now()
	if since := now.Sub(renewed); since < 0 || since >= e.cfg.TTL-e.cfg.Renew {
		return nil, fmt.Errorf("%w: its last renewal was %s ago, and a follower may take over %s after it", ErrNotResumable, since, e.cfg.TTL)
	}
	s := e.look()
	switch {
	case s.err != nil:
		return nil, fmt.Errorf("%w: %w", ErrNotResumable, s.err)
	case !s.seen:
		return nil, fmt.Errorf("%w: no lease", ErrNotResumable)
	case s.lease.Holder != e.cfg.HostID || s.lease.Epoch != epoch || s.lease.Released:
		return nil, fmt.Errorf("%w: the lease holds epoch %d of %q (released %v), not this host's epoch %d", ErrNotResumable, s.lease.Epoch, s.lease.Holder, s.lease.Released, epoch)
	}
	l := s.lease
	l.Address = e.cfg.Address
	l.RenewCount++
	began := e.cfg.Clock.Now()
	if err := e.writeLease(l, began.Add(e.cfg.Renew)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotResumable, err)
	}
	return e.startTerm(l, began)
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/graftland/graft/elect"
)

// ErrNoAnswer: etcd did not answer a renewal before the next one was due;
// the leader stops its plugin (docs/semantics.md, "Floating plugins: the
// election").
var ErrNoAnswer = errors.New("etcd did not answer in time")

// term is one leadership of this host on etcd, an elect.Tenure. Besides
// the session, which keeps the lease alive in the background, it renews
// the lease itself every renew and checks its key: etcd cannot expire the
// lease before SessionTTL after a keepalive was sent, so the last renewal
// that succeeded bounds when another host may lead (Deadline: SessionTTL
// after it), as the file backend's does (docs/semantics.md, "Floating
// plugins: the election", "On etcd").
//
// Its epoch is the create revision of this host's key. It is lost when a
// renewal fails or comes too late, or the key is gone: the session keeps
// the lease no more by then, and the term writes nothing more to etcd; the
// lease expires SessionTTL after its last keepalive. Close stops renewing
// and the session, without releasing the lease, as a crash would: the
// next in line leads once the lease expires.
type term struct {
	*elect.Tenure
	e           *Election
	el          *concurrency.Election
	id          clientv3.LeaseID
	stopSession context.CancelFunc
	released    bool // Resign deleted the key
}

// newTerm is the term of el on lease id, its first renewal begun at began;
// it renews nothing until Start.
func (e *Election) newTerm(el *concurrency.Election, id clientv3.LeaseID, stopSession context.CancelFunc, began time.Time) *term {
	t := &term{e: e, el: el, id: id, stopSession: stopSession}
	t.Tenure = elect.NewTenure(elect.TenureConfig{
		Epoch: el.Rev(), Began: began,
		Clock: e.cfg.Clock, Renew: e.cfg.Renew, TTL: e.cfg.SessionTTL,
		RenewOnce: t.check, Release: t.release, Abandon: stopSession,
	})
	return t
}

// check renews the lease once and reads the key, both by deadline: a
// lease that expired, or a key gone or put again, ends the term. A member
// that fails the request (it died, or lost its leader) is not the end of
// the term: the request is made again, through the members that answer,
// until the deadline, when the next renewal is due, as for a renewal that
// takes long.
func (t *term) check(deadline time.Time) error {
	ctx, cancel := context.WithTimeout(t.e.ctx, deadline.Sub(t.e.cfg.Clock.Now()))
	defer cancel()
	for {
		err := t.checkOnce(ctx)
		if err == nil || errors.Is(err, elect.ErrSuperseded) || errors.Is(err, ErrNoAnswer) || t.e.ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNoAnswer, err)
		case <-time.After(retryPause):
		}
	}
}

// retryPause is the pause between two tries of a renewal that a member
// failed.
const retryPause = 50 * time.Millisecond

func (t *term) checkOnce(ctx context.Context) error {
	ka, err := t.e.client.KeepAliveOnce(ctx, t.id)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("renew epoch %d: %w: the session's lease expired", t.Epoch(), elect.ErrSuperseded)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("renew epoch %d: %w", t.Epoch(), ErrNoAnswer)
	case err != nil:
		return fmt.Errorf("renew epoch %d: %w", t.Epoch(), err)
	case ka.TTL <= 0:
		return fmt.Errorf("renew epoch %d: %w: the session's lease expired", t.Epoch(), elect.ErrSuperseded)
	}
	resp, err := t.e.client.Get(ctx, t.el.Key())
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("renew epoch %d: read the key: %w", t.Epoch(), ErrNoAnswer)
	case err != nil:
		return fmt.Errorf("renew epoch %d: read the key: %w", t.Epoch(), err)
	case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != t.Epoch():
		return fmt.Errorf("renew epoch %d: %w: the key %s is gone", t.Epoch(), elect.ErrSuperseded, t.el.Key())
	}
	return nil
}

// release deletes the key and revokes the lease, for Resign, so that the
// next in line leads at once. It returns elect.ErrNotLeader when Resign
// released it already. Each request gives up after renew; ctx cancelled
// leaves the term to expire, as Close does.
func (t *term) release(ctx context.Context) error {
	if t.released {
		return fmt.Errorf("%w: released already", elect.ErrNotLeader)
	}
	defer t.stopSession()
	if err := ctx.Err(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, t.e.cfg.Renew)
	defer cancel()
	if err := t.el.Resign(rctx); err != nil {
		return err
	}
	t.released = true
	if _, err := t.e.client.Revoke(rctx, t.id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("revoke the lease: %w", err)
	}
	return nil
}

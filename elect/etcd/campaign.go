package etcd

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/graftland/graft/elect"
)

// Campaign returns once this host leads, with its term. Each attempt
// grants a lease of the session TTL, starts a session on it (which keeps
// it alive), and campaigns with it: it puts its key under the prefix and
// waits until every key created before it is gone. A candidate in line
// follows the leader; it takes over as soon as the leader's key goes:
// resigned, or deleted with its lease SessionTTL after the leader's last
// keepalive. An attempt that fails (etcd unreachable, the session lost
// while in line) gives its lease up and is tried again after retryAfter.
//
// Cancelling ctx ends the wait and returns ctx's error (with the last
// error, if any); Close returns elect.ErrClosed.
func (e *Election) Campaign(ctx context.Context) (elect.Leadership, error) {
	ctx, stop := elect.Join(ctx, e.ctx)
	defer stop()
	var lastErr error
	for failed := 0; ; failed++ {
		t, err := e.attempt(ctx)
		if t != nil {
			return t, nil
		}
		if err != nil && ctx.Err() == nil {
			lastErr = err
		}
		if ctx.Err() != nil || elect.Sleep(ctx, e.cfg.Clock, e.retryAfter(failed)) != nil {
			if lastErr != nil {
				return nil, fmt.Errorf("campaign: %w (last error: %w)", context.Cause(ctx), lastErr)
			}
			return nil, context.Cause(ctx)
		}
	}
}

// attempt is one campaign on a session of its own.
func (e *Election) attempt(ctx context.Context) (*term, error) {
	e.revokeStale(ctx)
	gctx, cancel := context.WithTimeout(ctx, e.cfg.Renew)
	grant, err := e.client.Grant(gctx, int64(e.cfg.SessionTTL.Seconds()))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("grant a lease: %w", err)
	}
	// The session keeps the lease alive until stopSession, or Close.
	sctx, stopSession := context.WithCancel(e.ctx)
	sess, err := concurrency.NewSession(e.client, concurrency.WithLease(grant.ID), concurrency.WithContext(sctx))
	if err != nil {
		stopSession()
		e.revoke(grant.ID)
		return nil, fmt.Errorf("start a session: %w", err)
	}
	el := concurrency.NewElection(sess, e.key)
	if err := e.wait(ctx, sess, el); err != nil {
		stopSession()
		e.revoke(grant.ID)
		return nil, err
	}
	// The lease was kept alive while in line, by the session: renew it
	// once more to know from when its TTL runs at the latest.
	began := e.cfg.Clock.Now()
	t := e.newTerm(el, grant.ID, stopSession, began)
	if err := t.check(began.Add(e.cfg.Renew)); err != nil {
		stopSession()
		e.revoke(grant.ID)
		return nil, err
	}
	if !t.Start(e.ctx, e.goroutine) {
		stopSession()
		return nil, elect.ErrClosed
	}
	return t, nil
}

// wait campaigns with el until this host leads, ctx ends or the session
// is lost. The campaign runs on a goroutine of the election: one given up
// on ends when etcd answers, or at Close.
func (e *Election) wait(ctx context.Context, sess *concurrency.Session, el *concurrency.Election) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	won := make(chan error, 1)
	if !e.goroutine(func() { won <- el.Campaign(cctx, e.value()) }) {
		return elect.ErrClosed
	}
	e.following.Store(true)
	defer e.following.Store(false)
	select {
	case err := <-won:
		if err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
		return nil
	case <-sess.Done():
		return fmt.Errorf("campaign: the session's lease was lost while in line")
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// revoke gives lease id up, on a goroutine of the election and for at most
// renew, so that the keys put with it go at once: a candidate that left
// the line. One etcd did not take (it was unreachable) is given up again
// at the next attempt.
func (e *Election) revoke(id clientv3.LeaseID) {
	e.goroutine(func() {
		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Renew)
		defer cancel()
		if _, err := e.client.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) && e.ctx.Err() == nil {
			e.mu.Lock()
			e.stale = append(e.stale, id)
			e.mu.Unlock()
		}
	})
}

// revokeStale gives up, before an attempt, the leases of earlier
// attempts whose revoke etcd did not take (it was unreachable): their keys
// would stand in line for a whole sessionTTL more, since etcd extends every
// lease when a new leader is elected, so that after an outage the line of
// each plugin would be every candidate twice over. The lease of a term
// that was lost is left to expire: its key keeps the next in line waiting
// for sessionTTL, as the rule for a leader that cannot renew says, and so
// a cluster too slow to answer renewals in time does not also hand each
// plugin from host to host as fast as leaders lose their terms. Each
// revoke waits at most renew; those that fail wait for the next attempt.
func (e *Election) revokeStale(ctx context.Context) {
	e.mu.Lock()
	ids := e.stale
	e.stale = nil
	e.mu.Unlock()
	for i, id := range ids {
		rctx, cancel := context.WithTimeout(ctx, e.cfg.Renew)
		_, err := e.client.Revoke(rctx, id)
		cancel()
		if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			// etcd does not answer: keep these for the next attempt.
			e.mu.Lock()
			e.stale = append(e.stale, ids[i:]...)
			e.mu.Unlock()
			return
		}
	}
}

// retryAfter is the wait before the attempt after failed ones failed in a
// row: renew, doubled with each failure up to 4 × renew, and a part of
// renew that is this host's and this instance's own. When a cluster comes
// back from an outage every candidate of every host has lost its session
// at once; the same wait for all would bring them back at once too, and a
// cluster busy with a thousand campaigns answers renewals late, so that
// the leaders they elect lose their terms again (docs/semantics.md, "On
// etcd").
func (e *Election) retryAfter(failed int) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(e.cfg.HostID + "\x00" + e.cfg.Instance))
	spread := time.Duration(h.Sum32()%1000) * e.cfg.Renew / 1000
	return e.cfg.Renew<<min(failed, 2) + spread
}

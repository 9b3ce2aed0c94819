package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// term is one leadership of this host on etcd. Besides the session, which
// keeps the lease alive in the background, it renews the lease itself
// every renew and checks its key: etcd cannot expire the lease before
// SessionTTL after a keepalive was sent, so the last renewal that
// succeeded bounds when another host may lead (Deadline), as the file
// backend's does (docs/semantics.md, "Floating plugins: the election").
type term struct {
	e           *Election
	el          *concurrency.Election
	id          clientv3.LeaseID
	epoch       int64
	stopSession context.CancelFunc

	cancel context.CancelFunc
	done   chan struct{} // closed when renewal has stopped
	lost   chan struct{}
	err    error // why lost; written before lost is closed

	mu       sync.Mutex // serializes Resign and Close
	released bool       // Resign deleted the key

	renewedMu sync.Mutex
	renewed   time.Time // when the last successful renewal began
}

// start starts renewing, unless the election is closed.
func (t *term) start() bool {
	ctx, cancel := context.WithCancel(t.e.ctx)
	t.cancel = cancel
	if !t.e.goroutine(func() { t.renewLoop(ctx) }) {
		cancel()
		close(t.done)
		return false
	}
	return true
}

// Epoch is the create revision of this host's key.
func (t *term) Epoch() int64 { return t.epoch }

// Lost is closed when a renewal failed or came too late, or the key is
// gone: the session keeps the lease no more, and the term writes nothing
// more to etcd. The lease expires SessionTTL after its last keepalive.
func (t *term) Lost() <-chan struct{} { return t.lost }

// Err says why the term was lost; nil while Lost is open.
func (t *term) Err() error {
	select {
	case <-t.lost:
		return t.err
	default:
		return nil
	}
}

// Deadline is SessionTTL after the last successful renewal began.
func (t *term) Deadline() time.Time {
	t.renewedMu.Lock()
	defer t.renewedMu.Unlock()
	return t.renewed.Add(t.e.cfg.SessionTTL)
}

func (t *term) renewLoop(ctx context.Context) {
	defer close(t.done)
	clk, renew := t.e.cfg.Clock, t.e.cfg.Renew
	for {
		due := t.Deadline().Add(-t.e.cfg.SessionTTL).Add(renew)
		if elect.Sleep(ctx, clk, due.Sub(clk.Now())) != nil {
			return
		}
		began := clk.Now()
		next := due.Add(renew)
		var err error
		if late := began.Sub(next); late >= 0 {
			// Woken past the next renewal: this host was frozen or
			// starved, and another may lead by now.
			err = fmt.Errorf("renew epoch %d: %w: due %s ago", t.epoch, elect.ErrLate, (late + renew).Round(time.Millisecond))
		} else {
			err = t.check(next)
		}
		if err != nil {
			t.stopSession()
			t.err = err
			close(t.lost)
			return
		}
		t.renewedMu.Lock()
		t.renewed = began
		t.renewedMu.Unlock()
	}
}

// check renews the lease once and reads the key, both by deadline: a
// lease that expired, or a key gone or put again, ends the term.
func (t *term) check(deadline time.Time) error {
	ctx, cancel := context.WithTimeout(t.e.ctx, deadline.Sub(t.e.cfg.Clock.Now()))
	defer cancel()
	ka, err := t.e.client.KeepAliveOnce(ctx, t.id)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("renew epoch %d: %w: the session's lease expired", t.epoch, elect.ErrSuperseded)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("renew epoch %d: %w", t.epoch, ErrNoAnswer)
	case err != nil:
		return fmt.Errorf("renew epoch %d: %w", t.epoch, err)
	case ka.TTL <= 0:
		return fmt.Errorf("renew epoch %d: %w: the session's lease expired", t.epoch, elect.ErrSuperseded)
	}
	resp, err := t.e.client.Get(ctx, t.el.Key())
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("renew epoch %d: read the key: %w", t.epoch, ErrNoAnswer)
	case err != nil:
		return fmt.Errorf("renew epoch %d: read the key: %w", t.epoch, err)
	case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != t.epoch:
		return fmt.Errorf("renew epoch %d: %w: the key %s is gone", t.epoch, elect.ErrSuperseded, t.el.Key())
	}
	return nil
}

// stop ends renewal and waits for it.
func (t *term) stop() {
	t.cancel()
	<-t.done
}

// Resign deletes the key and revokes the lease, so that the next in line
// leads at once. Call it after the plugin has stopped. It returns
// elect.ErrNotLeader when the term was lost. Each request gives up after
// renew; ctx cancelled leaves the term to expire, as Close does.
func (t *term) Resign(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop()
	select {
	case <-t.lost:
		return fmt.Errorf("resign: %w: %w", elect.ErrNotLeader, t.err)
	default:
	}
	if t.released {
		return fmt.Errorf("resign: %w: released already", elect.ErrNotLeader)
	}
	defer t.stopSession()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("resign: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, t.e.cfg.Renew)
	defer cancel()
	if err := t.el.Resign(rctx); err != nil {
		return fmt.Errorf("resign: %w", err)
	}
	t.released = true
	if _, err := t.e.client.Revoke(rctx, t.id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("resign: revoke the lease: %w", err)
	}
	return nil
}

// Close stops renewing and keeping the lease alive, without releasing it,
// as a crash would: the next in line leads once the lease expires.
func (t *term) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop()
	t.stopSession()
}

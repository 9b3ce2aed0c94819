package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/graftland/graft/elect"
)

// A term on etcd is its session's lease and this host's key under the
// prefix, created at the epoch's revision. A program that executes a new
// one (graft upgrade) leaves both: nothing revokes the lease, which lives
// SessionTTL after its last keepalive. The new program takes them back
// (docs/upgrade.md): a session on the same lease, and the election
// resumed on the same key.

var _ elect.Resumer = (*Election)(nil)

// handover is what a term's Handover says: its lease and key.
type handover struct {
	Lease clientv3.LeaseID `json:"lease"`
	Key   string           `json:"key"`
}

// Handover is the term's lease and key.
func (t *term) Handover() string {
	b, _ := json.Marshal(handover{Lease: t.id, Key: t.el.Key()})
	return string(b)
}

// Resume takes back the term of epoch that this host held before an exec
// (elect.Resumer): the key of the handover must still be this host's,
// created at epoch on the handover's lease, and the last renewal less than
// SessionTTL minus renew ago. It keeps the lease alive again, and renews
// and checks it every renew, as after a campaign.
func (e *Election) Resume(ctx context.Context, epoch int64, renewed time.Time, h string) (elect.Leadership, error) {
	var ho handover
	if err := json.Unmarshal([]byte(h), &ho); err != nil || ho.Key == "" {
		return nil, fmt.Errorf("%w: no lease and key in %q", elect.ErrNotResumable, h)
	}
	if since := e.cfg.Clock.Now().Sub(renewed); since < 0 || since >= e.cfg.SessionTTL-e.cfg.Renew {
		return nil, fmt.Errorf("%w: its last renewal was %s ago, and its lease lives %s after it", elect.ErrNotResumable, since, e.cfg.SessionTTL)
	}
	gctx, cancel := context.WithTimeout(ctx, e.cfg.Renew)
	resp, err := e.client.Get(gctx, ho.Key)
	cancel()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: read its key: %w", elect.ErrNotResumable, err)
	case len(resp.Kvs) == 0:
		return nil, fmt.Errorf("%w: its key %s is gone", elect.ErrNotResumable, ho.Key)
	case resp.Kvs[0].CreateRevision != epoch || clientv3.LeaseID(resp.Kvs[0].Lease) != ho.Lease:
		return nil, fmt.Errorf("%w: its key %s was put again", elect.ErrNotResumable, ho.Key)
	}
	sctx, stopSession := context.WithCancel(e.ctx)
	sess, err := concurrency.NewSession(e.client, concurrency.WithLease(ho.Lease), concurrency.WithContext(sctx))
	if err != nil {
		stopSession()
		return nil, fmt.Errorf("%w: a session on its lease: %w", elect.ErrNotResumable, err)
	}
	el := concurrency.ResumeElection(sess, e.key, ho.Key, epoch)
	began := e.cfg.Clock.Now()
	t := e.newTerm(el, ho.Lease, stopSession, began)
	if err := t.check(began.Add(e.cfg.Renew)); err != nil {
		stopSession()
		return nil, fmt.Errorf("%w: %w", elect.ErrNotResumable, err)
	}
	if !t.Start(e.ctx, e.goroutine) {
		stopSession()
		return nil, elect.ErrClosed
	}
	return t, nil
}

package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/graftland/graft/elect"
)

// Observe reports who leads, as the file backend's Observe does: the first
// reading, and every change of leader (epoch, holder or address) or of
// Dead, which here means that no candidate holds the prefix. It reads the
// leader, then watches the prefix from the revision read, and reads again
// at every event; a read or a watch that fails (etcd restarting) is tried
// again after renew, and reports nothing. Cancelling ctx, or Close, stops
// it and closes the channel.
func (e *Election) Observe(ctx context.Context) <-chan elect.Observation {
	return elect.Stream(ctx, e.ctx, e.goroutine, e.observe)
}

func (e *Election) observe(ctx context.Context, ch chan<- elect.Observation) {
	var last *elect.Observation
	for ctx.Err() == nil {
		o, rev, err := e.look(ctx)
		if err != nil {
			if elect.Sleep(ctx, e.cfg.Clock, e.cfg.Renew) != nil {
				return
			}
			continue
		}
		if last == nil || changed(*last, o) {
			select {
			case ch <- o:
				last = &o
			case <-ctx.Done():
				return
			}
		}
		e.awaitEvent(ctx, rev)
	}
}

// look reads the leader once, with the revision it was read at.
func (e *Election) look(ctx context.Context) (elect.Observation, int64, error) {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Renew)
	defer cancel()
	resp, err := e.client.Get(rctx, e.key, clientv3.WithFirstCreate()...)
	if err != nil {
		return elect.Observation{}, 0, err
	}
	if len(resp.Kvs) == 0 {
		return elect.Observation{Dead: true}, resp.Header.Revision, nil
	}
	kv := resp.Kvs[0]
	return elect.Observation{Lease: lease(kv.Value, kv.CreateRevision)}, resp.Header.Revision, nil
}

// awaitEvent returns at the first change of the prefix after rev, or when
// the watch fails or ctx ends.
func (e *Election) awaitEvent(ctx context.Context, rev int64) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := e.client.Watch(wctx, e.key, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for wr := range wch {
		if wr.Err() != nil || len(wr.Events) > 0 {
			return
		}
	}
}

func changed(a, b elect.Observation) bool {
	return a.Dead != b.Dead || a.Lease.Epoch != b.Lease.Epoch ||
		a.Lease.Holder != b.Lease.Holder || a.Lease.Address != b.Lease.Address
}

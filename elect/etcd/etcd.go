// Package etcd is the etcd backend of floating plugins' elections: the
// same promises as the shared directory's lease file (package elect), kept
// by etcd's concurrency package: a session's lease, and an election whose
// leader is the candidate key with the lowest create revision
// (docs/semantics.md, "Floating plugins: the election"). The key's create
// revision is the term's epoch: etcd's revisions grow across the whole
// cluster, so it is a valid fencing token.
//
// It is a package of its own so that programs that elect through a
// directory do not link the etcd client.
package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/group"
)

// dialTimeout bounds the connection to an endpoint, so a host that cannot
// reach one tries the next.
const dialTimeout = 2 * time.Second

// ErrNoLeader: no candidate holds the election's key prefix.
var ErrNoLeader = errors.New("no host leads")

// Election is one host's part in one instance's election on etcd. It is an
// elect.Backend; Close stops every goroutine it started and closes its
// client.
type Election struct {
	cfg elect.EtcdConfig
	key string // the candidates' key prefix
	// client is shared with the process's other elections on the same
	// cluster (clients.go); release gives it back.
	client  *clientv3.Client
	release func()

	ctx        context.Context // ends with Close
	cancel     context.CancelFunc
	goroutines group.Group // renewals, observers: ended by Close

	following atomic.Bool

	mu sync.Mutex
	// stale are leases given up whose revoke etcd did not take:
	// revokeStale gives them up before an attempt.
	stale []clientv3.LeaseID
}

var _ elect.Backend = (*Election)(nil)

// New checks cfg and connects to its endpoints; it does not wait for them
// to answer: the first campaign or look does.
func New(cfg elect.EtcdConfig) (elect.Backend, error) {
	e, err := Open(cfg)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return e, nil
}

// Open is New, returning the Election itself.
func Open(cfg elect.EtcdConfig) (*Election, error) {
	if err := cfg.Fill(); err != nil {
		return nil, err
	}
	client, release, err := clientFor(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Election{cfg: cfg, key: cfg.Candidates(), client: client, release: release, ctx: ctx, cancel: cancel}, nil
}

// Close stops every goroutine of the election and gives its client back.
// A term still held is abandoned, as by a crash: its lease expires after
// the session TTL.
func (e *Election) Close() {
	// Every request of the election is bound to its context, so that the
	// cancel ends what waits on etcd (a campaign's watch, a resign that does
	// not answer) without closing the client its neighbours share.
	e.goroutines.Close(e.cancel)
	e.release()
}

// goroutine runs f on a goroutine the election owns, or returns false if
// the election is closed.
func (e *Election) goroutine(f func()) bool { return e.goroutines.Go(f) }

// Following reports whether a campaign waits behind a leader.
func (e *Election) Following() bool { return e.following.Load() }

// Problem is nil: what keeps a host out of an etcd election (an
// unreachable server, refused credentials) is Campaign's error to report.
func (e *Election) Problem() error { return nil }

// value is what a candidate's key holds.
type value struct {
	Holder  string `json:"holder"`
	Address string `json:"address"`
}

func (e *Election) value() string {
	b, _ := json.Marshal(value{Holder: e.cfg.HostID, Address: e.cfg.Address})
	return string(b)
}

// lease is the elect.Lease of a candidate's key.
func lease(v []byte, createRev int64) elect.Lease {
	var val value
	_ = json.Unmarshal(v, &val) // a foreign value shows as no holder
	return elect.Lease{Holder: val.Holder, Address: val.Address, Epoch: createRev}
}

// Leader reads who leads: the candidate key with the lowest create
// revision. etcd keeps no age: it is always zero.
func (e *Election) Leader(ctx context.Context) (elect.Lease, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Renew)
	defer cancel()
	resp, err := e.client.Get(ctx, e.key, clientv3.WithFirstCreate()...)
	if err != nil {
		return elect.Lease{}, 0, fmt.Errorf("read the leader of %s: %w", e.key, err)
	}
	if len(resp.Kvs) == 0 {
		return elect.Lease{}, 0, fmt.Errorf("%w %s", ErrNoLeader, e.key)
	}
	kv := resp.Kvs[0]
	return lease(kv.Value, kv.CreateRevision), 0, nil
}

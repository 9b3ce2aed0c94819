// Package floating runs a plugin on exactly one of several hosts: the one
// that leads the plugin's election, through a lease file in a directory
// the hosts share (docs/semantics.md, "Floating plugins: the election").
// It wraps another placement, which runs the plugin while this host leads,
// and publishes every change of leader on a channel, so that the host can
// point consumers at the new leader.
package floating

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// Options configures a Placement.
type Options struct {
	// HostID names this host in its elections; required.
	HostID string
	// Clock is the elections' clock; nil is real time.
	Clock elect.Clock
	// Logger receives the changes of role; nil: slog's default.
	Logger *slog.Logger
	// Timing is the inner placement's stop windows; zero: the fixed ones.
	// A plugin's ttl must leave a leader that cannot renew the time to
	// stop it (elect.MinTTL).
	Timing runtime.Timing
	// Fault is passed to every election (elect.Config.Fault): tests make
	// the share hang or fail with it, as a real unreachable NFS server
	// would; nil in production.
	Fault func(op string) error
	// Etcd opens an election on etcd, for plugins whose elect has etcd;
	// nil refuses them. The host passes the etcd backend's New
	// (elect/etcd): this package does not import it, so that programs
	// that only elect through a directory do not link the etcd client.
	Etcd func(elect.EtcdConfig) (elect.Backend, error)
}

// Change is a change of a floating plugin's leader, as this host saw it:
// a new epoch, or a new address.
type Change struct {
	// Plugin is the plugin's name.
	Plugin string
	// Lease is the new leader's lease.
	Lease elect.Lease
}

// Placement runs floating plugins: each takes part in its election, and
// runs on the inner placement while this host leads it. It is safe for
// concurrent use.
type Placement struct {
	inner   runtime.Placement
	opt     Options
	log     *slog.Logger
	changes *queue

	mu      sync.Mutex
	handles map[string]*handle // by plugin: its latest start
	closed  bool
}

// New returns a Placement that runs its leaders' plugins on inner. inner
// stays the caller's: Close does not close it.
func New(inner runtime.Placement, opt Options) *Placement {
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Placement{inner: inner, opt: opt, log: log, changes: newQueue(), handles: map[string]*handle{}}
}

// Changes delivers every change of leader of the plugins this placement
// runs, in the order they were seen; of several changes of one plugin not
// yet received, only the last is kept. It is closed by Close. Reading it
// is optional: publishing never waits for a reader.
func (p *Placement) Changes() <-chan Change { return p.changes.out }

// Start joins the election of req's plugin and returns its handle once
// some host leads, this one or another: its consumers need the leader's
// address. It waits at most ttl plus poll, the longest a healthy election
// takes to show a leader. While this host leads, the plugin runs on the
// inner placement with the instance name and the epoch as its identity,
// and is started again whenever it dies.
//
// A start that fails (no leader in time, an election that cannot go on,
// ctx cancelled) leaves the election and stops what it started.
func (p *Placement) Start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pl := req.Plugin
	e := pl.Elect
	if e == nil {
		return nil, fmt.Errorf("start %s: a floating plugin needs elect", pl.Name)
	}
	addr, err := publishAddress(e)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", pl.Name, err)
	}
	el, err := p.backend(req, addr)
	if err != nil {
		return nil, fmt.Errorf("start %s: join the election: %w", pl.Name, err)
	}
	h := newHandle(p, req, el, addr)
	if !p.track(h) {
		el.Close()
		return nil, fmt.Errorf("start %s: %w", pl.Name, errClosed)
	}
	h.join()
	if err := h.awaitLeader(ctx); err != nil {
		stop := context.Background()
		if ctx.Err() != nil {
			stop = ctx // cancelled: force what runs, at once
		}
		h.Stop(stop)
		return nil, err
	}
	return h, nil
}

// backend opens req's election, through its directory or on etcd, with
// this host's address addr.
func (p *Placement) backend(req runtime.Request, addr string) (elect.Backend, error) {
	pl, e, t := req.Plugin, req.Plugin.Elect, p.timing()
	budget := t.ShutdownTimeout + t.ExitWindow + t.KillAfter
	if e.Etcd == nil {
		el, err := elect.New(elect.Config{
			Dir: req.Path(e.Dir), Instance: pl.Instance, HostID: p.opt.HostID, Address: addr,
			TTL: e.TTL.Std(), Renew: e.Renew.Std(), Poll: e.Poll.Std(), LockStale: e.LockStale.Std(),
			Clock: p.opt.Clock, Fault: p.opt.Fault, StopBudget: budget,
		})
		if err != nil {
			return nil, err
		}
		return el.Backend(), nil
	}
	if p.opt.Etcd == nil {
		return nil, errors.New("this program cannot elect on etcd")
	}
	cfg, err := EtcdConfig(req, addr)
	if err != nil {
		return nil, err
	}
	cfg.HostID, cfg.Clock, cfg.StopBudget = p.opt.HostID, p.opt.Clock, budget
	return p.opt.Etcd(cfg)
}

// timing is the inner placement's stop windows.
func (p *Placement) timing() runtime.Timing {
	if p.opt.Timing == (runtime.Timing{}) {
		return runtime.DefaultTiming()
	}
	return p.opt.Timing
}

// DefaultRetry is the retry of a floating plugin whose spec has none: a
// second's delay, doubled up to 30 seconds, for ever. A leader starts its
// plugin again on it when the plugin dies, and a Supervisor starts the
// campaign again on it when a start saw no leader in time (a stale lock, a
// directory not yet writable): a floating plugin does not stay down while
// the hosts can elect.
func (p *Placement) DefaultRetry() *spec.Retry {
	return &spec.Retry{Delay: spec.FromStd(time.Second), Factor: 2, Max: spec.FromStd(30 * time.Second)}
}

var errClosed = errors.New("the floating placement is closed")

// track records h as its plugin's latest start, unless p is closed.
func (p *Placement) track(h *handle) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.handles[h.req.Plugin.Name] = h
	return true
}

// forget drops h once it is stopped.
func (p *Placement) forget(h *handle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handles[h.req.Plugin.Name] == h {
		delete(p.handles, h.req.Plugin.Name)
	}
}

// Leader is the lease of floating plugin name's election, as this host
// sees it.
type Leader struct {
	elect.Lease
	// Instance is the plugin's instance name; Dir its election's
	// directory, on the file backend.
	Instance, Dir string
	// Backend is "file" or "etcd"; on etcd, Endpoints are the servers and
	// Key the prefix of the candidates' keys.
	Backend   string
	Endpoints []string
	Key       string
	// Age is how long the lease file has looked unchanged to this host.
	Age time.Duration
	// TTL is the election's ttl.
	TTL time.Duration
	// Role is this host's part in the election.
	Role Role
}

// Leader reads the lease of the election floating plugin name takes part
// in on this host.
func (p *Placement) Leader(ctx context.Context, name string) (Leader, error) {
	p.mu.Lock()
	h := p.handles[name]
	p.mu.Unlock()
	if h == nil {
		return Leader{}, fmt.Errorf("%s has not joined its election on this host", name)
	}
	return h.leaderInfo(ctx)
}

// Close stops every plugin the placement runs, as Handle.Stop does, and
// then closes Changes. The inner placement is left open.
func (p *Placement) Close() error {
	p.mu.Lock()
	p.closed = true
	hs := make([]*handle, 0, len(p.handles))
	for _, h := range p.handles {
		hs = append(hs, h)
	}
	p.mu.Unlock()
	err := runtime.StopAll(context.Background(), hs)
	p.changes.close()
	return err
}

package floating

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/runtime"
)

// Role is a host's part in a floating plugin's election.
type Role string

// The roles.
const (
	// Leading: this host leads, and runs the plugin.
	Leading Role = "leader"
	// Following: another host leads, and its lease is healthy.
	Following Role = "follower"
	// Candidate: bootstrapping, contending or backing off.
	Candidate Role = "candidate"
)

// handle is one floating plugin on this host: it campaigns in the
// plugin's election and, while this host leads, runs the plugin on the
// inner placement with the instance name and the epoch as its identity,
// restarting it if it dies. A leader that loses its term stops the
// plugin first, then campaigns again. On every host it watches who leads,
// and publishes each change.
type handle struct {
	p    *Placement
	req  runtime.Request
	el   elect.Backend
	addr string // where this host's plugin serves, when it leads

	ctx    context.Context // the campaign's life: cancelled by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	stopping bool
	leading  bool
	sup      *runtime.Supervisor // the plugin, while leading
	term     elect.Leadership    // the term, while leading
	resume   *resumed            // a term to take back before any campaign (Adopt)
	leader   elect.Lease         // who leads, as last seen
	known    chan struct{}       // closed once a leader is known
	led      chan struct{}       // closed once this host has led
	since    time.Time
	ended    chan struct{} // closed when the campaign cannot go on; then:
	why      error         // why (an *elect.ExhaustedError)

	stopOnce sync.Once
	outcome  runtime.Outcome // the Stop's, once stopOnce has run
	stopErr  error
	endOnce  sync.Once
	done     chan struct{} // closed when the handle has ended; then:
	exit     runtime.Exit
}

func newHandle(p *Placement, req runtime.Request, el elect.Backend, addr string) *handle {
	ctx, cancel := context.WithCancel(context.Background())
	return &handle{p: p, req: req, el: el, addr: addr, ctx: ctx, cancel: cancel,
		known: make(chan struct{}), led: make(chan struct{}), ended: make(chan struct{}), done: make(chan struct{}), since: time.Now()}
}

// join starts campaigning and observing.
func (h *handle) join() {
	h.wg.Add(2)
	go h.campaign()
	go h.observe()
}

// awaitLeader waits until some host leads, at most ttl plus poll; when
// this host does, until its plugin has started (and is ready), which its
// ready check bounds. A lease this host may not read by then is not a
// failed start: the handle waits for it to become readable.
func (h *handle) awaitLeader(ctx context.Context) error {
	p := h.req.Plugin
	e := p.Elect
	wait := time.NewTimer(e.LeaseTTL() + e.Poll.Std())
	defer wait.Stop()
	led := h.led
	for {
		select {
		case <-h.known:
			return nil
		case <-h.ended:
			return fmt.Errorf("start %s: %w", p.Name, h.why)
		case <-wait.C:
			if h.el.Problem() != nil {
				// A lease this host may not read: some host may lead
				// through it. The handle stays, reports the problem in its
				// State, and its campaign reads the lease again every poll.
				return nil
			}
			if e.Etcd != nil {
				return fmt.Errorf("start %s: no leader elected on etcd %v within %s: does every host reach etcd?", p.Name, e.Etcd.Endpoints, e.LeaseTTL()+e.Poll.Std())
			}
			return fmt.Errorf("start %s: no leader elected in %s within %s: is the directory readable and writable on every host?", p.Name, e.Dir, e.TTL.Std()+e.Poll.Std())
		case <-ctx.Done():
			return ctx.Err()
		case <-led:
			wait.Stop()
			led = nil // this host leads: wait for its plugin's start
		}
	}
}

// campaign leads when it can: it runs the plugin while leading, and stops
// it first when the term is lost, the handle stops, or the leader gives
// up (its plugin does not answer, or does not start); then it campaigns
// again, after backing off when it gave up.
func (h *handle) campaign() {
	defer h.wg.Done()
	name := h.req.Plugin.Name
	for {
		r := h.takeResume()
		var term elect.Leadership
		var err error
		if r != nil {
			term = r.term
		} else {
			term, err = h.el.Campaign(h.ctx)
		}
		if err != nil {
			if h.ctx.Err() == nil { // not stopped: it cannot go on
				h.p.log.Error("the election cannot go on", "plugin", name, "err", err)
				h.mu.Lock()
				h.why = err
				h.mu.Unlock()
				close(h.ended)
				h.end(runtime.Exit{Error: err.Error(), Outcome: runtime.Exited})
			}
			return
		}
		w := newWatch(h)
		h.lead(term, w, r)
		select {
		case <-term.Lost():
			h.p.log.Warn("lost the lead: stopping the plugin first", "plugin", name, "epoch", term.Epoch(), "err", term.Err())
			h.follow(w, term.Deadline())
		case why := <-w.giveUp:
			h.p.log.Warn("giving up the lead: stopping the plugin, then releasing the lease", "plugin", name, "epoch", term.Epoch(), "why", why)
			h.follow(w, term.Deadline())
			h.resign(term)
			if elect.Sleep(h.ctx, h.clock(), h.req.Plugin.Elect.LeaseTTL()) != nil {
				return
			}
		case <-h.ctx.Done():
			h.follow(w, time.Time{})
			h.resign(term)
			return
		}
	}
}

// resign releases the lease of term, once its plugin has stopped.
func (h *handle) resign(term elect.Leadership) {
	if err := term.Resign(context.Background()); err != nil {
		h.p.log.Warn("release the lease", "plugin", h.req.Plugin.Name, "err", err)
	}
}

// clock is the elections' clock.
func (h *handle) clock() elect.Clock {
	if c := h.p.opt.Clock; c != nil {
		return c
	}
	return elect.Skewed(0)
}

// lead starts the plugin with the epoch as its generation, watched by w,
// or, for a term taken back (r), adopts the process that runs it already.
// It is started again whenever it dies: on the plugin's retry, or
// DefaultRetry's.
func (h *handle) lead(term elect.Leadership, w *watch, r *resumed) {
	req := h.inner(term.Epoch())
	p := req.Plugin
	sup := runtime.NewSupervisor(w.placement(), req)
	h.mu.Lock()
	if h.stopping {
		h.mu.Unlock()
		if r != nil {
			r.inner.Stop(context.Background())
		}
		return
	}
	h.leading, h.sup, h.term, h.since = true, sup, term, time.Now()
	select {
	case <-h.led:
	default:
		close(h.led)
	}
	h.mu.Unlock()
	h.p.log.Info("leading", "plugin", p.Name, "epoch", term.Epoch())
	if p.Elect.Probing() {
		w.wg.Add(1)
		go w.probe(sup)
	}
	w.wg.Add(1)
	go w.keepTerm(sup, term)
	// A term lost while the plugin starts (a ready check may take long)
	// aborts the start at once.
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go func() {
		select {
		case <-term.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	if r != nil {
		sup.Adopt(r.inner, r.since)
	} else if err := sup.Start(ctx); err != nil {
		h.p.log.Error("start the plugin as leader", "plugin", p.Name, "err", err)
	}
	h.saw(elect.Lease{Holder: h.p.opt.HostID, Address: h.addr, Epoch: term.Epoch()})
}

// follow stops the plugin, if it runs here, and then its watch. With a
// deadline (the term's, on the elections' clock), the stop is forced in
// time to be confirmed by then: KillAfter before it, which a forced
// stop's kill and reaping fit in (docs/semantics.md, "Floating plugins:
// the election").
func (h *handle) follow(w *watch, deadline time.Time) {
	h.mu.Lock()
	sup := h.sup
	h.leading, h.sup, h.term, h.since = false, nil, nil, time.Now()
	h.mu.Unlock()
	if sup != nil {
		ctx := context.Background()
		if !deadline.IsZero() {
			left := deadline.Sub(h.clock().Now()) - h.p.timing().KillAfter
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, left)
			defer cancel()
		}
		sup.Stop(ctx)
	}
	w.close()
}

// observe follows the lease, to learn of every change of leader. A
// lease this host holds is lead's to report, once its plugin has
// started: the consumers of a leader's plugin wait for it.
func (h *handle) observe() {
	defer h.wg.Done()
	for o := range h.el.Observe(h.ctx) {
		if !o.Dead && o.Lease.Holder != h.p.opt.HostID {
			h.saw(o.Lease)
		}
	}
}

// saw notes who leads, and publishes a new leader or a new address.
func (h *handle) saw(l elect.Lease) {
	h.mu.Lock()
	if l.Epoch < h.leader.Epoch {
		h.mu.Unlock()
		return // an old lease, read late
	}
	changed := l.Epoch != h.leader.Epoch || l.Address != h.leader.Address
	h.leader = l
	select {
	case <-h.known:
	default:
		close(h.known)
	}
	h.mu.Unlock()
	if changed {
		h.p.changes.publish(Change{Plugin: h.req.Plugin.Name, Lease: l})
	}
}

// Stop leaves the election: a leader stops the plugin, then marks the
// lease released so another host takes over within one poll. Concurrent
// and later calls wait for the first and return what it did.
func (h *handle) Stop(ctx context.Context) (runtime.Outcome, error) {
	h.stopOnce.Do(func() { h.outcome, h.stopErr = h.stop(ctx) })
	return h.outcome, h.stopErr
}

func (h *handle) stop(ctx context.Context) (runtime.Outcome, error) {
	h.mu.Lock()
	h.stopping = true
	sup := h.sup
	h.mu.Unlock()
	outcome, err := runtime.Exited, error(nil)
	var exit runtime.Exit
	if sup != nil {
		outcome, err = sup.Stop(ctx)
		exit = sup.LastExit()
	}
	h.cancel()
	h.wg.Wait()
	h.el.Close()
	h.p.forget(h)
	exit.Requested, exit.Outcome, exit.At = true, outcome, time.Now()
	h.end(exit)
	return outcome, err
}

// end records how the handle ended and closes Done, the first time.
func (h *handle) end(exit runtime.Exit) {
	h.endOnce.Do(func() {
		h.exit = exit
		close(h.done)
	})
}

// Done is closed once the handle has ended: stopped, or its election
// could not go on.
func (h *handle) Done() <-chan struct{} { return h.done }

// Exit is how the handle ended: the last exit of the plugin on this host
// when it was stopped, or why the election could not go on.
func (h *handle) Exit() runtime.Exit { return h.exit }

// Identity is the instance name and the epoch this host last saw.
func (h *handle) Identity() runtime.Identity { return h.State().Identity }

// PID is the plugin's process while this host leads, else 0.
func (h *handle) PID() int { return h.State().PID }

// State is the plugin's state on this host: its process's while leading,
// standby while another host leads; with this host's role and the
// leader's address.
func (h *handle) State() runtime.State {
	h.mu.Lock()
	defer h.mu.Unlock()
	var st runtime.State
	switch {
	case h.sup != nil:
		st = h.sup.State()
	case h.why != nil: // the campaign ended: no host leads, nor can
		st = runtime.State{Status: runtime.Failed, Since: h.since, LastError: h.why.Error()}
	case h.leader.Epoch > 0:
		st = runtime.State{Status: runtime.Standby, Since: h.since,
			Identity: runtime.Identity{ID: h.req.Plugin.Instance, Generation: h.leader.Epoch}}
	default:
		st = runtime.State{Status: runtime.Starting, Since: h.since}
	}
	if err := h.el.Problem(); err != nil && h.sup == nil {
		st.LastError = err.Error()
	}
	st.Role, st.Address, st.Epoch, st.Backend = string(h.roleLocked()), h.leader.Address, h.leader.Epoch, h.req.Plugin.Elect.Backend()
	return st
}

// roleLocked is this host's role. h.mu is held.
func (h *handle) roleLocked() Role {
	switch {
	case h.leading:
		return Leading
	case h.el.Following():
		return Following
	}
	return Candidate
}

// leaderInfo reads the election's lease.
func (h *handle) leaderInfo(ctx context.Context) (Leader, error) {
	l, age, err := h.el.Leader(ctx)
	if err != nil {
		return Leader{}, err
	}
	h.mu.Lock()
	role := h.roleLocked()
	h.mu.Unlock()
	p := h.req.Plugin
	info := Leader{Lease: l, Instance: p.Instance, Backend: p.Elect.Backend(), Age: age, TTL: p.Elect.LeaseTTL(), Role: role}
	if c := p.Elect.Etcd; c != nil {
		info.Endpoints, info.Key = c.Endpoints, c.Prefix+p.Instance+"/"
	} else {
		info.Dir = h.req.Path(p.Elect.Dir)
	}
	return info, nil
}

// inner is the request of the plugin's process on the inner placement
// while this host leads with epoch: the instance name and the epoch as
// its identity, a retry (DefaultRetry's when it has none), and kept for
// the next program only across an upgrade, never past a crash of the
// host: another host may take the lease then (docs/upgrade.md).
func (h *handle) inner(epoch int64) runtime.Request {
	req := h.req
	p := *req.Plugin
	if p.Retry == nil {
		p.Retry = h.p.DefaultRetry()
	}
	req.Plugin = &p
	req.Identity = &runtime.Identity{ID: p.Instance, Generation: epoch}
	req.UpgradeOnly = true
	return req
}

// resumed is a term taken back after an exec of a new program, and the
// process adopted that runs its plugin.
type resumed struct {
	term  elect.Leadership
	inner runtime.Handle
	since time.Time
}

// takeResume is the term to take back, once.
func (h *handle) takeResume() *resumed {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.resume
	h.resume = nil
	return r
}

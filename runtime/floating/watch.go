package floating

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// watch is what keeps an eye on the plugin of one term while this host
// leads (docs/semantics.md, "Floating plugins: the election"): a probe at
// every renewal, and a count of the plugin's failed starts. Either one,
// past its limit, sends why on giveUp, once: the leader then stops its
// plugin, releases the lease so that another host can try, and backs off.
type watch struct {
	h      *handle
	giveUp chan string // buffered: the first reason is kept
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the prober and the watchers of started plugins

	mu     sync.Mutex
	failed int // failed starts in a row
}

func newWatch(h *handle) *watch {
	ctx, cancel := context.WithCancel(h.ctx)
	return &watch{h: h, giveUp: make(chan string, 1), ctx: ctx, cancel: cancel}
}

// quit gives up the lead, for the first reason only.
func (w *watch) quit(why string) {
	select {
	case w.giveUp <- why:
	default:
	}
}

// close stops the prober and the watchers and waits for them. The plugin
// is stopped by then, so every watcher of a start has seen it end.
func (w *watch) close() {
	w.cancel()
	w.wg.Wait()
}

// placement is inner, counting the failed starts of the plugin.
func (w *watch) placement() runtime.Placement { return starts{w.h.p.inner, w} }

// starts is a placement that tells its watch how each start went.
type starts struct {
	runtime.Placement
	w *watch
}

// Start starts the plugin on the inner placement. A start that fails,
// unless cancelled, or a plugin that ends on its own within one renew,
// is a failed start; one that runs for a renew resets the count.
func (s starts) Start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	ph, err := s.Placement.Start(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			s.w.startFailed(err.Error())
		}
		return nil, err
	}
	s.w.wg.Add(1)
	go s.w.settle(ph)
	return ph, nil
}

// settle waits one renew for ph to end on its own.
func (w *watch) settle(ph runtime.Handle) {
	defer w.wg.Done()
	t := time.NewTimer(w.h.req.Plugin.Elect.Renew.Std())
	defer t.Stop()
	select {
	case <-ph.Done():
		if exit := ph.Exit(); !exit.Requested {
			w.startFailed("exited at once: " + exit.String())
		}
	case <-t.C:
		w.mu.Lock()
		w.failed = 0
		w.mu.Unlock()
	case <-w.ctx.Done():
	}
}

func (w *watch) startFailed(why string) {
	limit := orDefault(w.h.req.Plugin.Elect.StartFailures, spec.DefaultStartFailures)
	w.mu.Lock()
	w.failed++
	n := w.failed
	w.mu.Unlock()
	if n >= limit {
		w.quit(fmt.Sprintf("its plugin failed to start %d times in a row (last: %s)", n, why))
	}
}

// probe checks, every renew, that the plugin answers while it runs; after
// probeFailures failures in a row it gives up the lead. It runs on its own
// goroutine until the watch is closed.
func (w *watch) probe(sup *runtime.Supervisor) {
	defer w.wg.Done()
	e := w.h.req.Plugin.Elect
	limit := orDefault(e.ProbeFailures, spec.DefaultProbeFailures)
	failed := 0
	for {
		if elect.Sleep(w.ctx, w.h.clock(), e.Renew.Std()) != nil {
			return
		}
		if sup.State().Status != runtime.Running {
			failed = 0 // restarting: its starts are counted instead
			continue
		}
		err := w.h.probeOnce(w.ctx)
		if err == nil || w.ctx.Err() != nil {
			failed = 0
			continue
		}
		failed++
		w.h.p.log.Warn("the leader's plugin does not answer", "plugin", w.h.req.Plugin.Name, "failures", failed, "err", err)
		if failed >= limit {
			w.quit(fmt.Sprintf("its plugin failed %d probes in a row (last: %v)", failed, err))
			return
		}
	}
}

// keepTerm has the init of the host's PID namespace stop the leader's
// plugin at the end of its term unless this host renews it, every half
// renew: so that the plugin is gone by the term's deadline even while
// this host cannot run at all, frozen or stalled (docs/semantics.md,
// "Floating plugins: the election"). The init begins its stop a stop
// budget before the deadline, later than the host itself would have
// (once a renewal is late): it acts only for a host that could not.
func (w *watch) keepTerm(sup *runtime.Supervisor, term elect.Leadership) {
	defer w.wg.Done()
	t := w.h.p.timing()
	budget := t.ShutdownTimeout + t.ExitWindow + t.KillAfter
	e := w.h.req.Plugin.Elect
	clock, every := w.h.clock(), e.Renew.Std()/2
	if every <= 0 {
		every = e.LeaseTTL() / 6 // etcd's session keeps itself alive
	}
	every = max(every, 10*time.Millisecond)
	warned := false
	for {
		if left := term.Deadline().Sub(clock.Now()) - budget; left > 0 {
			if err := sup.SetTerm(left); err != nil && !warned {
				warned = true
				w.h.p.log.Warn("the leader's plugin is stopped at the end of its term by this host alone, which a freeze of it would keep running", "plugin", w.h.req.Plugin.Name, "err", err)
			}
		}
		if elect.Sleep(w.ctx, clock, every) != nil {
			return
		}
	}
}

// probeOnce checks once that the plugin answers, within a renew and at
// most elect.DialTimeout: with its ready check when that is tcp or http,
// else with a TCP connect to the address it is published at. Only a check
// the process itself must answer (http) sees a plugin stopped by SIGSTOP:
// the kernel completes a TCP handshake for a stopped listener.
func (h *handle) probeOnce(ctx context.Context) error {
	e := h.req.Plugin.Elect
	ctx, cancel := context.WithTimeout(ctx, min(elect.DialTimeout, e.Renew.Std()))
	defer cancel()
	if r := h.req.Launch.Ready; r != nil && (r.TCP != "" || r.HTTP != "") {
		return ready.Probe(ctx, r.Probe, nil)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// orDefault is n, or def when n is zero: a spec that was not loaded from
// a file (the Go API) has no defaults filled in.
func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

package runner

import (
	"context"
	"time"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/placement"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/spec"
)

// checkHealth runs the health check of p, which a start asked for, on
// this machine while p runs, and sends each result to p's session as a
// health event (docs/runner-api.md, "Health checks"). The runner counts
// nothing and decides nothing: the host does, so that a host that loses
// its runner does not also take the plugin for unhealthy.
func (r *Runner) checkHealth(p *process, hc *spec.Health) {
	defer r.wg.Done()
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-p.h.Done():
			cancel()
		case <-stop:
		}
	}()
	var exec ready.Exec
	if pr, ok := p.h.(placement.Prober); ok {
		exec = pr.Probe
	}
	health.Run(ctx, hc, exec, func(res health.Result) {
		ev := runnerapi.Event{Type: runnerapi.EventHealth, Instance: p.name, Generation: p.gen,
			Health: &runnerapi.HealthResult{OK: res.Err == nil, At: res.At}}
		if res.Err != nil {
			ev.Health.Error = res.Err.Error()
		}
		r.mu.Lock()
		s := p.session
		r.mu.Unlock()
		if s != nil {
			s.send(ev)
		}
	})
}

// healthOf is the health check a start asks for, with graft's defaults
// where it leaves a window out; nil when it asks for none.
func healthOf(h *runnerapi.Health) *spec.Health {
	if h == nil {
		return nil
	}
	ms := func(v int64, def time.Duration) spec.Duration {
		if v <= 0 {
			return spec.FromStd(def)
		}
		return spec.FromStd(time.Duration(v) * time.Millisecond)
	}
	return &spec.Health{TCP: h.TCP, HTTP: h.HTTP, Exec: h.Exec, Interval: ms(h.IntervalMillis, spec.DefaultHealthInterval),
		Timeout: ms(h.TimeoutMillis, spec.DefaultHealthTimeout), StartPeriod: spec.FromStd(time.Duration(max(h.StartPeriodMillis, 0)) * time.Millisecond)}
}

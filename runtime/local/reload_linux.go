package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
)

var _ runtime.Reloader = (*process)(nil)

// settle is how long a reload with no probe to pass waits to see the
// process live on: a program that dies of a config it rejects does so at
// once.
const settle = 500 * time.Millisecond

// Reload carries out l.Reload (runtime.Reloader; docs/semantics.md,
// "Reloads"): its check, run as the plugin runs, then its signal to the
// main process or its command, then the proof that the process took it:
// alive, and passing its ready probe and its health probe, all within
// the ready timeout. A failure once it was signalled, or its command ran,
// is a *runtime.ReloadUnconfirmed.
func (p *process) Reload(ctx context.Context, l launch.Spec) error {
	r := l.Reload
	if r == nil {
		return errors.New("it declares no reload")
	}
	timeout := launch.DefaultReadyTimeout
	if l.Ready != nil && l.Ready.Timeout > 0 {
		timeout = l.Ready.Timeout.Std()
	}
	deadline := time.Now().Add(timeout)
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if len(r.Check) > 0 {
		if err := p.probe(cctx, r.Check); err != nil {
			return fmt.Errorf("its check %s failed, so nothing was signalled and the old config stays: %w", argvText(r.Check), err)
		}
	}
	if r.Signal != "" {
		if err := p.SignalMain(proc.SignalNamed(r.Signal)); err != nil {
			return fmt.Errorf("send %s: %w", r.Signal, err)
		}
	} else if err := p.probe(cctx, r.Command); err != nil {
		return &runtime.ReloadUnconfirmed{Err: fmt.Errorf("its command %s failed: %w", argvText(r.Command), err)}
	}
	if err := p.tookReload(ctx, l, deadline, timeout); err != nil {
		return &runtime.ReloadUnconfirmed{Err: err}
	}
	return nil
}

// tookReload checks that the process lives on after a reload and passes
// its ready probe and its health probe by deadline, timeout after the
// reload began (a log pattern is not
// waited for again: the line it matched may never come back). ctx is the
// caller's: the deadline is the probes' own, so that one that runs out
// says what its last attempt found.
func (p *process) tookReload(ctx context.Context, l launch.Spec, deadline time.Time, timeout time.Duration) error {
	var probes []launch.Probe
	if l.Ready != nil && l.Ready.Kind() != "" {
		probes = append(probes, l.Ready.Probe)
	}
	if l.Health != nil {
		probes = append(probes, l.Health.Probe)
	}
	if len(probes) == 0 {
		select {
		case <-p.p.Exited():
		case <-time.After(min(settle, time.Until(deadline))):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, pr := range probes {
		left := max(time.Until(deadline), time.Millisecond)
		err := ready.Wait(ctx, &launch.Ready{Probe: pr, Timeout: launch.Duration(left)}, p.probe, p.p.Exited(), nil)
		var late *ready.NotReadyError
		if errors.As(err, &late) {
			late.Timeout = timeout // the reload's, of which this probe had what was left
		}
		switch {
		case errors.Is(err, ready.ErrGone):
			return errors.New("it exited after the reload")
		case err != nil:
			return fmt.Errorf("after the reload its %s check did not pass: %w", pr.Kind(), err)
		}
	}
	select {
	case <-p.p.Exited():
		return errors.New("it exited after the reload")
	default:
		return nil
	}
}

// argvText is a command as an error shows it: [nginx -t].
func argvText(argv []string) string { return "[" + strings.Join(argv, " ") + "]" }

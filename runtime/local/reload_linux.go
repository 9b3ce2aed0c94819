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
// the ready timeout.
func (p *process) Reload(ctx context.Context, l launch.Spec) error {
	r := l.Reload
	if r == nil {
		return errors.New("it declares no reload")
	}
	timeout := launch.DefaultReadyTimeout
	if l.Ready != nil && l.Ready.Timeout > 0 {
		timeout = l.Ready.Timeout.Std()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(r.Check) > 0 {
		if err := p.probe(ctx, r.Check); err != nil {
			return fmt.Errorf("its check %s failed, so nothing was signalled and the old config stays: %w", argvText(r.Check), err)
		}
	}
	if r.Signal != "" {
		if err := p.signalMain(proc.SignalNamed(r.Signal)); err != nil {
			return fmt.Errorf("send %s: %w", r.Signal, err)
		}
	} else if err := p.probe(ctx, r.Command); err != nil {
		return fmt.Errorf("its command %s failed: %w", argvText(r.Command), err)
	}
	return p.tookReload(ctx, l, timeout)
}

// tookReload checks that the process lives on after a reload and passes
// its ready probe and its health probe (a log pattern is not waited for
// again: the line it matched may never come back).
func (p *process) tookReload(ctx context.Context, l launch.Spec, timeout time.Duration) error {
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
		case <-time.After(settle):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, pr := range probes {
		left := time.Until(deadlineOf(ctx, timeout))
		err := ready.Wait(ctx, &launch.Ready{Probe: pr, Timeout: launch.Duration(max(left, time.Millisecond))}, p.probe, p.p.Exited(), nil)
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

func deadlineOf(ctx context.Context, timeout time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(timeout)
}

// argvText is a command as an error shows it: [nginx -t].
func argvText(argv []string) string { return "[" + strings.Join(argv, " ") + "]" }

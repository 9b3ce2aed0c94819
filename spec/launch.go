package spec

import "github.com/graftland/graft/launch"

// Launch is the process of p as every placement runs it, and the runner
// is sent it (launch.Spec): its command, dir, env (its env files merged
// in), inheritEnv, tty, stopSignal, ready and health, with the defaults
// Load applied, its user, group, umask and limits, and its reload
// (reloadSignal being its short form). This is the one place the spec's
// process fields become a
// launch.Spec.
func (p *Plugin) Launch() launch.Spec {
	l := launch.Spec{Command: p.Command, Env: p.Env, InheritEnv: p.InheritEnv, Dir: p.Dir, TTY: p.TTY, StopSignal: p.StopSignal, StopMode: p.StopMode,
		User: p.User, Group: p.Group, Umask: string(p.Umask), Limits: launchLimits(p.Limits), Listen: p.Listen, ListenKey: p.listenKey()}
	if r := p.Ready; r != nil {
		l.Ready = &launch.Ready{Log: r.Log, Probe: r.Probe, Timeout: launch.Duration(r.Timeout.Std())}
	}
	if h := p.Health; h != nil {
		l.Health = &launch.Health{Probe: h.Probe, Interval: launch.Duration(h.Interval.Std()),
			Timeout: launch.Duration(h.Timeout.Std()), StartPeriod: launch.Duration(h.StartPeriod.Std())}
	}
	switch {
	case p.Reload != nil:
		r := *p.Reload
		l.Reload = &r
	case p.ReloadSignal != "":
		l.Reload = &launch.Reload{Signal: p.ReloadSignal}
	}
	return l
}

package spec

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The checks of the whole, defaulted spec: what each placement needs, and
// the references between entries.

// validateStructure checks what only the whole, defaulted spec can tell: what
// each placement needs, references between entries, and uses cycles.
func (d *decoder) validateStructure(s *Spec) {
	runners := slices.Sorted(maps.Keys(s.Runners))
	plugins := d.pluginNames(s)
	d.eachPlugin(plugins, func(d *decoder, name string) {
		p, path := s.Plugins[name], join("plugins", name)
		if p == nil {
			return
		}
		if slices.Contains(Placements, p.Run) {
			d.placement(p, path, runners, s.here(p))
		}
		for i, u := range p.Uses {
			if _, ok := s.Plugins[u]; ok {
				continue
			}
			if up := fmt.Sprintf("%s.uses[%d]", path, i); !d.isBad(up) {
				d.errorf(d.at(up), up, "unknown plugin %q%s", u, didYouMean(u, plugins))
			}
		}
		d.validateConditions(s, p, path)
		d.once(p, path)
		d.healthPlacement(p, path)
	})
	d.cycles(s, plugins)
}

// once checks a one-shot plugin: it runs to completion, which a floating
// plugin (kept running on whichever host leads) cannot, and it is checked
// by its exit, so a liveness check has nothing to add.
func (d *decoder) once(p *Plugin, path string) {
	if !p.Once.On {
		return
	}
	if why := p.Run.Traits().NoOnce; why != "" {
		d.errorf(d.at(path+".once"), path+".once", "%s", why)
	}
	if d.written(path + ".health") {
		d.errorf(d.at(path+".health"), path+".health", "a one-shot (once: true) is checked by its exit; health is for plugins that keep running")
	}
}

// healthPlacement refuses a health check where it cannot run: on a
// floating plugin, whose leader restarts its own process and whose
// replacement would give up the lead, and an exec check on a worker,
// which has no process to run a command beside.
func (d *decoder) healthPlacement(p *Plugin, path string) {
	t := p.Run.Traits()
	switch {
	case p.Health == nil:
	case t.NoHealth != "":
		d.errorf(d.at(path+".health"), path+".health", "%s", t.NoHealth)
	case t.NoExec != "" && len(p.Health.Exec) > 0:
		d.errorf(d.at(path+".health.exec"), path+".health.exec", "%s", t.NoExec)
	}
}

// placement checks the fields that belong to p's placement, and only
// those, as the placement's traits say (placement.go); here says whether
// its process runs on this machine (Spec.here).
func (d *decoder) placement(p *Plugin, path string, runners []string, here bool) {
	run, t := string(p.Run), p.Run.Traits()
	only := func(field string, has func(Traits) bool, why string) {
		if d.written(path + "." + field) {
			d.errorf(d.at(path+"."+field), path+"."+field, "only for %s%s, and this plugin has run: %s", runsWith(has, true), why, run)
		}
	}
	for _, no := range []struct{ field, why string }{{"stopSignal", t.NoSignal}, {"stopMode", t.NoSignal}, {"dir", t.NoDir}, {"user", t.NoProc}, {"group", t.NoProc},
		{"umask", t.NoProc}, {"limits", t.NoProc}, {"tty", t.NoTTY}, {"reload", t.NoReload}, {"reloadSignal", t.NoReload}, {"listen", t.NoListen}, {"update", t.NoUpdate}, {"replicas", t.NoReplicas}} {
		if no.why != "" && d.written(path+"."+no.field) {
			d.errorf(d.at(path+"."+no.field), path+"."+no.field, "%s", no.why)
		}
	}
	module := func(t Traits) bool { return t.Module }
	if t.Module {
		d.mounts(p, path)
		if p.Module == "" {
			d.errorf(d.at(path), path, "missing module: a worker runs a WebAssembly module (module: ./app.wasm)")
		}
		if d.written(path + ".command") {
			d.errorf(d.at(path+".command"), path+".command", "a worker runs module, not command")
		}
	} else {
		switch {
		case d.isBad(path + ".command"): // reported as written
		case d.written(path+".command") && len(p.Command) == 0:
			d.errorf(d.at(path+".command"), path+".command", "empty; want the program and its arguments")
		case len(p.Command) == 0:
			d.errorf(d.at(path), path, "missing command, such as command: [./bin/api, --port, \"8080\"]")
		}
		for _, f := range []string{"module", "args", "mounts", "memory"} {
			only(f, module, "")
		}
	}
	if here {
		d.account(p, path)
	}
	if t.Runner {
		if p.Runner != "" && !slices.Contains(runners, p.Runner) {
			d.errorf(d.at(path+".runner"), path+".runner", "runner %q is not declared in runners%s", p.Runner, didYouMean(p.Runner, runners))
		}
	} else {
		only("runner", func(t Traits) bool { return t.Runner }, "")
	}
	if instance := func(t Traits) bool { return t.Instance }; !t.Instance {
		only("instance", instance, " ("+runsWith(instance, false)+" plugins get a fresh UUID each start)")
	}
	if t.Elect {
		d.elect(p.Elect, path+".elect", path)
	} else {
		only("elect", func(t Traits) bool { return t.Elect }, "")
	}
}

// runsWith names the placements whose traits have, or lack, what has
// says: "run: runner and run: floating", or, without, "local and worker".
func runsWith(has func(Traits) bool, with bool) string {
	var names []string
	for _, row := range placements {
		if has(row.Traits) == with {
			if with {
				names = append(names, "run: "+string(row.run))
			} else {
				names = append(names, string(row.run))
			}
		}
	}
	return strings.Join(names, " and ")
}

// mounts checks a worker's mounts: a host directory, an absolute guest
// path, each guest path once; and its memory, at least one 64 KiB page and
// at most WebAssembly's 4 GiB.
func (d *decoder) mounts(p *Plugin, path string) {
	seen := map[string]bool{}
	for i, m := range p.Mounts {
		mp := fmt.Sprintf("%s.mounts[%d]", path, i)
		switch {
		case m.Host == "":
			d.errorf(d.at(mp), mp, "missing host: the host directory to mount")
		case !strings.HasPrefix(m.Guest, "/"):
			d.errorf(d.at(mp+".guest"), mp+".guest", "want an absolute guest path, such as /data, got %q", m.Guest)
		case seen[m.Guest]:
			d.errorf(d.at(mp+".guest"), mp+".guest", "%s is mounted twice", m.Guest)
		}
		seen[m.Guest] = true
	}
	if d.written(path+".memory") && (p.Memory < 64<<10 || p.Memory > 4<<30) {
		d.errorf(d.at(path+".memory"), path+".memory", "want from 64 KiB to 4 GiB, got %s", p.Memory)
	}
}

func (d *decoder) elect(e *Elect, path, plugin string) {
	if e == nil {
		d.errorf(d.at(plugin), plugin, "missing elect: a floating plugin needs elect: {dir: /shared/dir, port: PORT}")
		return
	}
	switch {
	case e.Etcd != nil:
		d.etcdOnly(e, path)
	case e.Dir == "":
		d.errorf(d.at(path), path, "missing dir: the shared directory that holds the lease")
	}
	if e.Port == 0 && e.Address == "" && !d.isBad(path+".port") {
		d.errorf(d.at(path), path, "missing port: the port the plugin serves on, published to its consumers")
	}
	if e.Etcd != nil {
		if !e.Renew.Infinite() && e.Renew.Std() >= e.LeaseTTL() {
			d.errorf(d.at(path+".renew"), path+".renew", "renew (%s) must be shorter than etcd.sessionTTL (%s)", e.Renew, e.Etcd.SessionTTL)
			return
		}
		if e.LeaseTTL()%time.Second == 0 { // else reported as not whole seconds
			d.fenceInTime(e, path)
		}
		return
	}
	ttl := e.TTL.Std()
	for _, f := range []struct {
		key string
		v   Duration
	}{{"renew", e.Renew}, {"poll", e.Poll}} {
		if f.v.Std() >= ttl && !f.v.Infinite() && !e.TTL.Infinite() {
			d.errorf(d.at(path+"."+f.key), path+"."+f.key, "%s (%s) must be shorter than ttl (%s), or the leader is taken for dead while alive", f.key, f.v, e.TTL)
			return
		}
	}
	d.fenceInTime(e, path)
}

// fenceInTime checks that a leader whose renewals stop succeeding can stop
// its plugin before another host may lead: it gives up 2 × renew after its
// last successful renewal began, then a stop takes up to StopBudget, and
// others take over ttl after that renewal (docs/semantics.md, "Floating
// plugins: the election").
func (d *decoder) fenceInTime(e *Elect, path string) {
	if e.TTL.Infinite() || e.Renew.Infinite() || e.Etcd != nil && e.Etcd.SessionTTL.Infinite() {
		return
	}
	ttl, renew := e.LeaseTTL(), e.Renew.Std()
	name, at := "ttl", path+".ttl"
	if e.Etcd != nil {
		name, at = "etcd.sessionTTL", path+".etcd.sessionTTL"
	}
	if need := 2*renew + StopBudget; ttl <= need {
		if !d.written(at) {
			at = path
		}
		or := ""
		if ttl > StopBudget { // else no renew would do
			or = fmt.Sprintf(", or renew shorter than %s", FromStd((ttl-StopBudget)/2))
		}
		d.errorf(d.at(at), at, "%s (%s) is too short to stop the plugin before another host may lead: a leader that cannot renew gives up 2 × renew (%s) after its last renewal, and its stop may take %s (shutdown 5 seconds, then 1 + 1); make %s longer than %s%s",
			name, FromStd(ttl), FromStd(2*renew), FromStd(StopBudget), name, FromStd(need), or)
	}
}

// etcdOnly checks that an election on etcd sets none of the lease file's
// fields: dir, ttl (etcd.sessionTTL plays its part), poll (followers
// watch) and lockStale.
func (d *decoder) etcdOnly(e *Elect, path string) {
	for _, f := range []struct{ key, why string }{
		{"dir", "dir and etcd exclude each other: dir is the shared directory of an election through a lease file, etcd an election on etcd"},
		{"ttl", "ttl is the lease file's: on etcd, set etcd.sessionTTL"},
		{"poll", "poll is the lease file's: on etcd, followers watch the leader's key"},
		{"lockStale", "lockStale is the lease file's: etcd needs no lock file"},
	} {
		if at := path + "." + f.key; d.written(at) {
			d.errorf(d.at(at), at, "%s", f.why)
		}
	}
}

func validateRunnerAddress(addr string) error {
	bad := fmt.Errorf("want tcp://HOST:PORT or unix:///ABSOLUTE/PATH, got %q", addr)
	switch {
	case strings.HasPrefix(addr, "tcp://"):
		if err := validateHostPort(strings.TrimPrefix(addr, "tcp://")); err != nil {
			return bad
		}
	case strings.HasPrefix(addr, "unix://"):
		if !strings.HasPrefix(strings.TrimPrefix(addr, "unix://"), "/") {
			return bad
		}
	default:
		return bad
	}
	return nil
}

func validateHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want HOST:PORT with a port from 1 to 65535, got %q", addr)
	}
	return nil
}

package spec

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// maxNameLen keeps names usable as file names and DNS labels.
const maxNameLen = 63

var (
	// nameRE is the form of project, plugin and runner names: they become
	// file names and parts of instance names.
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	// instanceRE is the form of an instance name, <project>.<plugin> by default.
	instanceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// Signals are the names stopSignal accepts.
var Signals = []string{"SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGWINCH"}

// checkValues checks the values the file wrote, before defaults fill the
// rest: a duration written as "0 seconds" must be rejected, not replaced by
// its default.
func (d *decoder) checkValues(s *Spec) {
	if d.written("name") && !validName(s.Name) {
		d.errorf(d.at("name"), "name", "bad project name %q: %s", s.Name, nameRule)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Runners)) {
		r, path := s.Runners[name], join("runners", name)
		d.name(path, name, "runner")
		if r == nil {
			continue
		}
		if r.Address != "" {
			if err := checkRunnerAddress(r.Address); err != nil {
				d.errorf(d.at(path+".address"), path+".address", "%v", err)
			}
		}
		if t := r.TLS; t != nil {
			if !strings.HasPrefix(r.Address, "tcp://") {
				d.errorf(d.at(path+".tls"), path+".tls", "tls needs a tcp:// address")
			}
			if (t.Cert == "") != (t.Key == "") {
				d.errorf(d.at(path+".tls"), path+".tls", "cert and key go together: set both or neither")
			}
		}
		d.positive(path+".connect.lease", r.Connect.Lease)
		d.positive(path+".connect.margin", r.Connect.Margin)
	}
	plugins := d.pluginNames(s)
	d.eachPlugin(plugins, func(d *decoder, name string) {
		p, path := s.Plugins[name], join("plugins", name)
		d.name(path, name, "plugin")
		if p != nil { // else reported by the decoder
			d.pluginValues(p, path)
		}
	})
}

const nameRule = "want lower-case letters, digits, '-' and '_', starting with a letter or digit, at most 63 characters"

func validName(s string) bool { return len(s) <= maxNameLen && nameRE.MatchString(s) }

func (d *decoder) name(path, name, what string) {
	if !validName(name) {
		d.errorf(d.atKey(path), path, "bad %s name %q: %s", what, name, nameRule)
	}
}

// pluginValues checks the values of the plugin at path that its types
// cannot: its placement, command, environment, uses, stop signal,
// readiness, retry, instance name and election.
func (d *decoder) pluginValues(p *Plugin, path string) {
	if d.written(path+".run") && !slices.Contains(Placements, p.Run) {
		d.errorf(d.at(path+".run"), path+".run", "unknown placement %q; want one of local, worker, runner, floating%s",
			p.Run, didYouMean(string(p.Run), placementNames()))
	}
	d.argv(path+".command", p.Command)
	d.envValues(p.Env, path+".env")
	d.inheritEnv(p, path)
	d.usesConditions(p, path)
	seen := make(map[string]bool, len(p.Uses))
	for i, u := range p.Uses {
		if seen[u] {
			up := fmt.Sprintf("%s.uses[%d]", path, i)
			d.errorf(d.at(up), up, "%q is listed twice", u)
		}
		seen[u] = true
	}
	if d.written(path+".stopSignal") && !slices.Contains(Signals, p.StopSignal) {
		d.errorf(d.at(path+".stopSignal"), path+".stopSignal", "unknown signal %q; want one of %s%s",
			p.StopSignal, strings.Join(Signals, ", "), signalHint(p.StopSignal))
	}
	if r := p.Ready; r != nil {
		d.readyValues(r, path+".ready")
	}
	if hc := p.Health; hc != nil {
		d.healthValues(hc, path+".health")
	}
	if r := p.Retry; r != nil {
		d.retryValues(r, path+".retry")
	}
	if d.written(path+".instance") && !(len(p.Instance) <= 253 && instanceRE.MatchString(p.Instance)) {
		d.errorf(d.at(path+".instance"), path+".instance",
			"bad instance name %q: want letters, digits, '.', '-' and '_', starting with a letter or digit, at most 253 characters", p.Instance)
	}
	if e := p.Elect; e != nil {
		d.electValues(e, path+".elect")
	}
	d.filesValues(p, path)
}

// envValues checks a plugin's env at path: names an environment can
// hold, none in graft's reserved GRAFT_ prefix, and no NUL in a value.
func (d *decoder) envValues(env map[string]string, path string) {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		kp := path + "." + k
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			d.errorf(d.atKey(kp), kp, "bad environment variable name %q: it cannot be empty or hold '=' or NUL", k)
		case strings.HasPrefix(strings.ToUpper(k), "GRAFT_"):
			d.errorf(d.atKey(kp), kp, "the GRAFT_ prefix is reserved: graft sets GRAFT_INSTANCE_ID, GRAFT_GENERATION and GRAFT_PLUGIN itself")
		case strings.ContainsRune(env[k], 0):
			d.errorf(d.at(kp), kp, "value contains a NUL byte")
		}
	}
}

// retryValues checks a plugin's retry at rp: positive durations, a finite
// factor of at least 1, and no negative number of attempts.
func (d *decoder) retryValues(r *Retry, rp string) {
	d.positive(rp+".delay", r.Delay)
	d.positive(rp+".max", r.Max)
	if d.written(rp+".factor") && (r.Factor < 1 || math.IsInf(r.Factor, 0) || math.IsNaN(r.Factor)) {
		d.errorf(d.at(rp+".factor"), rp+".factor", "want a finite number of at least 1, got %v", r.Factor)
	}
	if r.Attempts < 0 {
		d.errorf(d.at(rp+".attempts"), rp+".attempts", "want 0 (no limit) or more, got %d", r.Attempts)
	}
}

// electValues checks a floating plugin's elect at ep: a port, an address
// of host and port, and positive durations.
func (d *decoder) electValues(e *Elect, ep string) {
	if d.written(ep+".port") && (e.Port < 1 || e.Port > 65535) {
		d.errorf(d.at(ep+".port"), ep+".port", "want a port from 1 to 65535, got %d", e.Port)
	}
	if e.Address != "" {
		if err := checkHostPort(e.Address); err != nil {
			d.errorf(d.at(ep+".address"), ep+".address", "%v", err)
		}
	}
	for _, f := range []struct {
		key string
		v   Duration
	}{{"ttl", e.TTL}, {"renew", e.Renew}, {"poll", e.Poll}, {"lockStale", e.LockStale}} {
		d.positive(ep+"."+f.key, f.v)
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"probeFailures", e.ProbeFailures}, {"startFailures", e.StartFailures}} {
		if d.written(ep+"."+f.key) && f.v < 1 {
			d.errorf(d.at(ep+"."+f.key), ep+"."+f.key, "want 1 or more, got %d", f.v)
		}
	}
	if e.Etcd != nil {
		d.etcdValues(e.Etcd, ep+".etcd")
	}
}

// etcdValues checks an election on etcd at path: endpoints that are
// http:// or https:// URLs of a host and port, a session TTL of whole
// seconds (etcd's leases count seconds), TLS's cert and key together, and
// a username with its password file.
func (d *decoder) etcdValues(c *Etcd, path string) {
	if len(c.Endpoints) == 0 && !d.isBad(path+".endpoints") {
		d.errorf(d.at(path), path, "missing endpoints: the etcd servers' client URLs, such as [http://10.0.0.5:2379]")
	}
	for i, ep := range c.Endpoints {
		at := fmt.Sprintf("%s.endpoints[%d]", path, i)
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || checkHostPort(u.Host) != nil || strings.Trim(u.Path, "/") != "" {
			d.errorf(d.at(at), at, "want http://HOST:PORT or https://HOST:PORT, got %q", ep)
		}
	}
	d.positive(path+".sessionTTL", c.SessionTTL)
	if d.written(path+".sessionTTL") && !c.SessionTTL.Infinite() && c.SessionTTL.Std()%time.Second != 0 {
		d.errorf(d.at(path+".sessionTTL"), path+".sessionTTL", "want whole seconds (etcd's leases count seconds), got %s", c.SessionTTL)
	}
	if t := c.TLS; t != nil && (t.Cert == "") != (t.Key == "") {
		d.errorf(d.at(path+".tls"), path+".tls", "cert and key go together: set both or neither")
	}
	if (c.Username == "") != (c.PasswordFile == "") {
		d.errorf(d.at(path), path, "username and passwordFile go together: set both or neither")
	}
}

// argv checks a command line: a program name, and no NUL anywhere, which
// no exec call can pass.
func (d *decoder) argv(path string, args []string) {
	for i, arg := range args {
		ap := func() string { return fmt.Sprintf("%s[%d]", path, i) } // only for an error: a large file has many
		if i == 0 && arg == "" {
			d.errorf(d.at(ap()), ap(), "empty program name")
		}
		if strings.IndexByte(arg, 0) >= 0 {
			d.errorf(d.at(ap()), ap(), "contains a NUL byte")
		}
	}
}

func (d *decoder) readyValues(r *Ready, path string) {
	set := d.probeValues(r.TCP, r.HTTP, r.Exec, path)
	_, log := d.pos[path+".log"]
	if d.written(path + ".log") {
		if _, err := regexp.Compile(r.Log); err != nil {
			d.errorf(d.at(path+".log"), path+".log", "bad regular expression (RE2): %v", err)
		}
	}
	switch {
	case set > 1:
		d.errorf(d.at(path), path, "want at most one of tcp, http and exec (log may go with any), found %d", set)
	case set == 0 && !log:
		d.errorf(d.at(path), path, "want one of log, tcp, http and exec")
	}
	d.positive(path+".timeout", r.Timeout)
}

// healthValues checks a health check at path: exactly one probe, positive
// durations and at least one failure.
func (d *decoder) healthValues(hc *Health, path string) {
	if set := d.probeValues(hc.TCP, hc.HTTP, hc.Exec, path); set != 1 {
		d.errorf(d.at(path), path, "want exactly one of tcp, http and exec, found %d", set)
	}
	for _, k := range []string{"interval", "timeout", "startPeriod"} {
		d.positive(path+"."+k, map[string]Duration{"interval": hc.Interval, "timeout": hc.Timeout, "startPeriod": hc.StartPeriod}[k])
	}
	if d.written(path+".failures") && hc.Failures < 1 {
		d.errorf(d.at(path+".failures"), path+".failures", "want 1 or more, got %d", hc.Failures)
	}
}

// probeValues checks the probe fields of a ready or health check at path
// and returns how many of them the file set.
func (d *decoder) probeValues(tcp, http string, exec []string, path string) int {
	set := 0
	for _, k := range []string{"tcp", "http", "exec"} {
		if _, ok := d.pos[path+"."+k]; ok {
			set++
		}
	}
	if d.written(path + ".tcp") {
		if err := checkHostPort(tcp); err != nil {
			d.errorf(d.at(path+".tcp"), path+".tcp", "%v", err)
		}
	}
	if d.written(path + ".http") {
		if u, err := url.Parse(http); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.errorf(d.at(path+".http"), path+".http", "want an http:// or https:// URL with a host, got %q", http)
		}
	}
	if d.written(path + ".exec") {
		if len(exec) == 0 {
			d.errorf(d.at(path+".exec"), path+".exec", "want a command, such as [pg_isready, -q]")
		}
		d.argv(path+".exec", exec)
	}
	return set
}

// positive checks that a duration the file wrote is finite and above zero:
// every duration of plugins.yaml must be (docs/semantics.md, "Windows and
// defaults": a lease, grace or margin must be finite and positive).
func (d *decoder) positive(path string, v Duration) {
	if !d.written(path) {
		return
	}
	if v.Infinite() || v.Std() <= 0 {
		d.errorf(d.at(path), path, "want a finite, positive duration, got %q", d.text[path])
	}
}

// written reports whether the file set the field at path to a value that
// decoded, so one bad value is reported once.
func (d *decoder) written(path string) bool {
	_, ok := d.pos[path]
	return ok && !d.isBad(path)
}

func placementNames() []string {
	names := make([]string, len(Placements))
	for i, p := range Placements {
		names[i] = string(p)
	}
	return names
}

func signalHint(sig string) string {
	up := strings.ToUpper(sig)
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	if slices.Contains(Signals, up) {
		return fmt.Sprintf("; did you mean %q?", up)
	}
	return didYouMean(sig, Signals)
}

// inheritEnv checks the names a plugin inherits from the environment of
// the daemon that starts it: names env could set, each once, none that
// env sets too, and none of graft's own (GRAFT_ variables pass on anyway).
// A name that is not set where the plugin starts is fine: it is not
// passed on.
func (d *decoder) inheritEnv(p *Plugin, path string) {
	seen := map[string]bool{}
	for i, k := range p.InheritEnv {
		ip := fmt.Sprintf("%s.inheritEnv[%d]", path, i)
		_, inEnv := p.Env[k]
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			d.errorf(d.at(ip), ip, "bad environment variable name %q: it cannot be empty or hold '=' or NUL", k)
		case strings.HasPrefix(strings.ToUpper(k), "GRAFT_"):
			d.errorf(d.at(ip), ip, "the GRAFT_ prefix is reserved: graft's own variables reach every plugin without inheritEnv")
		case seen[k]:
			d.errorf(d.at(ip), ip, "%q is listed twice", k)
		case inEnv:
			d.errorf(d.at(ip), ip, "%q is set in env too: inherit it or set it, not both", k)
		}
		seen[k] = true
	}
}

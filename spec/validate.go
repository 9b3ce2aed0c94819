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

	"github.com/graftland/graft/instance"
	"github.com/graftland/graft/launch"
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

// Signals are the names stopSignal and reloadSignal accept.
var Signals = launch.Signals

// validateValues checks the values the file wrote, before defaults fill the
// rest: a duration written as "0 seconds" must be rejected, not replaced by
// its default.
func (d *decoder) validateValues(s *Spec) {
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
			if err := validateRunnerAddress(r.Address); err != nil {
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
		if r.InsecurePlaintext {
			switch at := path + ".insecurePlaintext"; {
			case !strings.HasPrefix(r.Address, "tcp://"):
				d.errorf(d.at(at), at, "insecurePlaintext is for a tcp:// address: a unix socket, or the embedded runner, carries no token across a network")
			case r.TLS != nil:
				d.errorf(d.at(at), at, "insecurePlaintext and tls exclude each other: with tls the token crosses TLS")
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
// cannot: its placement, its process (launchValues), uses, readiness,
// health, retry, instance name and election.
func (d *decoder) pluginValues(p *Plugin, path string) {
	if d.written(path+".run") && !slices.Contains(Placements, p.Run) {
		d.errorf(d.at(path+".run"), path+".run", "unknown placement %q; want one of %s%s",
			p.Run, strings.Join(placementNames(), ", "), didYouMean(string(p.Run), placementNames()))
	}
	d.reservedEnv(p, path)
	d.usesConditions(p, path)
	seen := make(map[string]bool, len(p.Uses))
	for i, u := range p.Uses {
		if seen[u] {
			up := fmt.Sprintf("%s.uses[%d]", path, i)
			d.errorf(d.at(up), up, "%q is listed twice", u)
		}
		seen[u] = true
	}
	if r := p.Ready; r != nil {
		d.positive(path+".ready.timeout", r.Timeout)
	}
	d.positive(path+".once.timeout", p.Once.Timeout)
	if hc := p.Health; hc != nil {
		d.healthValues(hc, path+".health")
	}
	d.limitsValues(p, path)
	d.launchValues(p, path)
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
	if u := p.Update; u != nil {
		d.updateValues(p, u, path+".update")
	}
	d.replicasValues(p, path)
	d.filesValues(p, path)
}

// replicasValues checks a plugin's replicas: from 1 to MaxReplicas, not
// for a one-shot, whose completion is one run's; a rolling replacement's
// parallel only with replicas.
func (d *decoder) replicasValues(p *Plugin, path string) {
	rp := path + ".replicas"
	switch {
	case !d.written(rp):
	case p.Replicas < 1 || p.Replicas > MaxReplicas:
		d.errorf(d.at(rp), rp, "want a number from 1 to %d, got %d; to run none, remove the plugin", MaxReplicas, p.Replicas)
	case p.Once.On:
		d.errorf(d.at(rp), rp, "a one-shot runs once: its completion is one run's, and replicas would run it again")
	}
	pp := path + ".update.parallel"
	switch {
	case !d.written(pp):
	case p.Update.Parallel < 1:
		d.errorf(d.at(pp), pp, "want 1 or more replicas replaced at once, got %d", p.Update.Parallel)
	case p.Replicas == 0:
		d.errorf(d.at(pp), pp, "parallel is how many replicas a rolling replacement replaces at once, and this plugin has no replicas: set replicas:, or remove parallel")
	}
}

// updateValues checks a plugin's update at up: a known order, and a
// start-first one only where two processes of the plugin can run at once:
// on sockets graft holds (listen), or where the program says it copes.
func (d *decoder) updateValues(p *Plugin, u *Update, up string) {
	d.positive(up+".deadline", u.Deadline)
	if d.written(up+".onFailure") && !slices.Contains(FailureModes, u.OnFailure) {
		d.errorf(d.at(up+".onFailure"), up+".onFailure", "unknown onFailure %q; want stop or rollback%s", u.OnFailure, didYouMean(u.OnFailure, FailureModes))
	}
	switch {
	case d.written(up+".order") && !slices.Contains(UpdateOrders, u.Order):
		d.errorf(d.at(up+".order"), up+".order", "unknown order %q; want stop-first or start-first%s", u.Order, didYouMean(u.Order, UpdateOrders))
	case u.Order == StartFirst && p.Once.On:
		d.errorf(d.at(up+".order"), up+".order", "a one-shot runs to completion: there is no process to keep serving while its next one starts")
	case u.Order == StartFirst && len(p.Listen) == 0 && !u.Overlap:
		d.errorf(d.at(up+".order"), up+".order", "start-first runs the new process beside the old one, and this plugin binds its own port: "+
			"hold its sockets with listen:, or say update.overlap: true if two of it can run at once (SO_REUSEPORT, say)")
	}
}

// launchValues checks the plugin's process as every placement and the
// runner check it (launch.Spec.Problems), each problem at its field: a
// field written empty is wrong, not absent. A field found bad already
// (reservedEnv, a duration) is reported once.
func (d *decoder) launchValues(p *Plugin, path string) {
	l := p.Launch()
	given := func(field string) bool {
		_, ok := d.pos[path+"."+field]
		return ok
	}
	for _, pr := range l.Problems(given) {
		if p.Reload == nil && strings.HasPrefix(pr.Field, "reload") {
			continue // reloadSignal, the short form: filesValues checks it
		}
		d.problem(path, pr)
	}
}

// problem reports launch's problem pr of the plugin at path, unless its
// field is bad already: at the field's key when the problem is its name,
// with a "did you mean" when its value must be one of a list.
func (d *decoder) problem(path string, pr *launch.Problem) {
	at := path + "." + pr.Field
	if d.isBad(at) {
		return
	}
	pos := d.at(at)
	if pr.Key {
		pos = d.atKey(at)
	}
	msg := pr.Msg
	switch {
	case pr.Suggest != "":
		msg += fmt.Sprintf("; did you mean %q?", pr.Suggest)
	case pr.Choices != nil:
		msg += didYouMean(pr.Value, pr.Choices)
	}
	d.errorf(pos, at, "%s", msg)
}

// reservedEnv refuses, in a plugin's env and inheritEnv, graft's reserved
// GRAFT_ prefix: graft sets those variables itself.
func (d *decoder) reservedEnv(p *Plugin, path string) {
	// The names are sorted, for the order of the errors, only when one is
	// reserved: a large file has tens of thousands, none of them reserved.
	reserved := false
	for k := range p.Env {
		reserved = reserved || instance.Reserved(k)
	}
	if reserved {
		for _, k := range slices.Sorted(maps.Keys(p.Env)) {
			if kp := path + ".env." + k; instance.Reserved(k) {
				d.errorf(d.atKey(kp), kp, "the GRAFT_ prefix is reserved: graft sets GRAFT_INSTANCE_ID, GRAFT_GENERATION and GRAFT_PLUGIN itself")
			}
		}
	}
	for i, k := range p.InheritEnv {
		if ip := fmt.Sprintf("%s.inheritEnv[%d]", path, i); instance.Reserved(k) {
			d.errorf(d.at(ip), ip, "the GRAFT_ prefix is reserved: graft's own variables reach every plugin without inheritEnv")
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
	kind, _ := ElectAddressKind(e.Address)
	if kind == AddressBad || (kind == AddressNetwork || kind == AddressInterface) && e.Port == 0 && !d.isBad(ep+".port") {
		d.errorf(d.at(ep+".address"), ep+".address", "want HOST:PORT with a port from 1 to 65535, or, with elect.port, a network to prefer (10.0.0.0/8) or an interface's name (eth0), got %q", d.text[ep+".address"])
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
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || validateHostPort(u.Host) != nil || strings.Trim(u.Path, "/") != "" {
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

// healthValues checks a health check at path beyond its probe
// (launchValues): positive durations and at least one failure.
func (d *decoder) healthValues(hc *Health, path string) {
	d.positive(path+".interval", hc.Interval)
	d.positive(path+".timeout", hc.Timeout)
	d.positive(path+".startPeriod", hc.StartPeriod)
	if d.written(path+".failures") && hc.Failures < 1 {
		d.errorf(d.at(path+".failures"), path+".failures", "want 1 or more, got %d", hc.Failures)
	}
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

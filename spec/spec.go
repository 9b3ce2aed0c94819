package spec

import (
	"cmp"
	"path/filepath"
	"time"

	"github.com/graftland/graft/launch"
)

// Spec is a loaded, defaulted and validated plugins.yaml.
type Spec struct {
	// Name is the project name; it defaults to the plugins file's directory name.
	Name string `yaml:"name"`
	// Runners are the graft runner daemons that `run: runner` plugins use, by name.
	Runners map[string]*Runner `yaml:"runners"`
	// Plugins are the processes graft keeps running, by name.
	Plugins map[string]*Plugin `yaml:"plugins"`

	// File is the path the spec was read from, as given; errors name it.
	File string `yaml:"-"`
	// Dir is the absolute directory of File; relative paths in the spec are
	// relative to it.
	Dir string `yaml:"-"`
	// Text is the exact bytes that were parsed.
	Text []byte `yaml:"-"`
	// Vars holds the variables that Text's ${VAR}s used, and their
	// values (vars.go): a host resolves the spec with them.
	Vars map[string]string `yaml:"-"`

	// idx caches Fields, Hash and Digest of a loaded Spec, which is not
	// changed after loading; a Spec built by hand has none, and computes
	// them on each call.
	idx *specIndex
	// content holds each plugin's content fields (files.go), merged into
	// its Fields; sources the digest of every file read, for Stale.
	content map[string]map[string]string
	sources map[string]string
	// key keys the digests of env values in fields (DigestKey); Load
	// gives a fresh random one, WithKey another.
	key DigestKey
}

// Runner is a graft runner daemon that remote plugins run on.
type Runner struct {
	Name string `yaml:"-"`
	// Address is tcp://HOST:PORT or unix:///PATH; empty means the runner
	// embedded in the host.
	Address string `yaml:"address"`
	// TokenFile holds the bearer token the runner expects.
	TokenFile string `yaml:"tokenFile"`
	// TLS, when set, makes the host connect over TLS.
	TLS *RunnerTLS `yaml:"tls"`
	// InsecurePlaintext lets the host send the token over plain TCP to a
	// runner beyond loopback: without it, and without TLS, the host sends
	// it only to a loopback address (docs/security.md, "Runner tokens").
	InsecurePlaintext bool `yaml:"insecurePlaintext"`
	// Connect tunes the host's session with the runner.
	Connect Connect `yaml:"connect"`
}

// RunnerTLS is how the host connects to a runner over TLS. Paths are
// relative to the spec's directory.
type RunnerTLS struct {
	// CA is a PEM file of the certificates that sign the runner's; empty
	// means the system's roots.
	CA string `yaml:"ca"`
	// Cert and Key are the host's client certificate and its key, for a
	// runner that requires one (--client-ca).
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// ServerName is the name the runner's certificate must carry; empty
	// means the address's host.
	ServerName string `yaml:"serverName"`
}

// Connect holds the lease settings of a host's session with a runner
// (docs/semantics.md, "Runner sessions and leases").
type Connect struct {
	// Lease is how long the runner keeps a session's processes without a
	// renewal; zero means the runner's own --lease.
	Lease Duration `yaml:"lease"`
	// Margin is added to the lease to bound how long the host waits for the
	// runner to confirm a stop; and the host gives up renewing the lease
	// (retrying a failed renewal) the margin, at most a third of the lease,
	// before it would run out.
	Margin Duration `yaml:"margin"`
}

// Plugin is one long-running process and how graft runs it.
type Plugin struct {
	Name string `yaml:"-"`
	// Run is the placement; see Placements.
	Run Placement `yaml:"run"`
	// Command is the program and its arguments (local, runner, floating).
	Command []string `yaml:"command"`
	// Module is the path of the WebAssembly module (worker).
	Module string `yaml:"module"`
	// Args are a worker's arguments, after its name.
	Args []string `yaml:"args"`
	// Mounts are host directories a worker sees, read-only unless
	// writable.
	Mounts []Mount `yaml:"mounts"`
	// Memory bounds a worker's linear memory; zero: worker.DefaultMemory,
	// 256 MiB.
	Memory Size `yaml:"memory"`
	// Env is added to the process environment.
	Env map[string]string `yaml:"env"`
	// InheritEnv names variables of the environment of the daemon that
	// starts the process (the host, or the runner) that it passes on,
	// when set there. Anything else of that environment is not passed on
	// beyond a minimal base (README: "A plugin's environment").
	InheritEnv []string `yaml:"inheritEnv"`
	// Dir is the working directory, relative to the spec's directory.
	Dir string `yaml:"dir"`
	// TTY runs the process's stdout and stderr through a pseudo-terminal
	// rather than a pipe (local, runner, floating): docs/semantics.md, "A
	// terminal for the output".
	TTY bool `yaml:"tty"`
	// User and Group are who the process and its exec checks run as, by
	// name or number (local, runner, floating): the host's user database
	// resolves them when the spec loads, a runner's when it starts the
	// plugin (docs/semantics.md, "User and group").
	User  string `yaml:"user"`
	Group string `yaml:"group"`
	// Umask is the process's umask, a quoted octal string ("007").
	Umask Umask `yaml:"umask"`
	// Limits are its resource limits, by their lower-case names without
	// RLIMIT_ (launch.LimitNames).
	Limits map[string]Limit `yaml:"limits"`
	// Uses names the plugins this one consumes: it starts after them and
	// stops before them. An entry is a name, or {plugin, until} with a
	// condition; the names are here and the conditions in Until.
	Uses Uses `yaml:"uses"`
	// Until holds the condition of each entry of Uses written in the long
	// form with an until; the others wait for ready (Condition.Of).
	Until map[string]Condition `yaml:"-"`
	// Once marks a one-shot plugin: it runs to completion (a migration, a
	// cache warm-up) and is not run again while it stays completed
	// (docs/semantics.md, "One-shot plugins").
	Once Once `yaml:"once"`
	// StopSignal starts the graceful stop (default SIGTERM).
	StopSignal string `yaml:"stopSignal"`
	// StopMode is who gets StopSignal: group (the default) or main
	// (launch.StopModes).
	StopMode string `yaml:"stopMode"`
	// Ready gates the start until the plugin answers.
	Ready *Ready `yaml:"ready"`
	// Health is a liveness check, run for as long as the plugin runs: a
	// plugin that fails it Failures times in a row is replaced.
	Health *Health `yaml:"health"`
	// Retry restarts a plugin that exits on its own.
	Retry *Retry `yaml:"retry"`
	// Runner names the runner of a `run: runner` plugin; empty means the
	// runner embedded in the host.
	Runner string `yaml:"runner"`
	// Instance is the stable identity of a runner or floating plugin; it
	// defaults to <project>.<plugin>.
	Instance string `yaml:"instance"`
	// Elect configures the election of a floating plugin.
	Elect *Elect `yaml:"elect"`
	// Files are files and directories whose content is part of the
	// plugin's state (files.go).
	Files []File `yaml:"files"`
	// EnvFile are dotenv files, relative to the spec's directory, whose
	// variables are added to the environment: later files override
	// earlier ones, and Env overrides them all (envfile.go).
	EnvFile []string `yaml:"envFile"`
	// Reload is how the plugin takes a changed file with onChange: reload
	// without a restart: a signal or a command, after an optional check
	// (docs/semantics.md, "Reloads").
	Reload *launch.Reload `yaml:"reload"`
	// ReloadSignal is the short form of Reload with a signal alone.
	ReloadSignal string `yaml:"reloadSignal"`
	// Listen are sockets the host (the runner, for a runner plugin) opens
	// and holds for the plugin, handed to its processes as systemd's
	// socket activation does (docs/semantics.md, "Held sockets").
	Listen []launch.Listen `yaml:"listen"`
	// Update is how a replacement of the plugin goes: stop-first (the
	// default) or start-first (docs/semantics.md, "Start-first
	// replacement").
	Update *Update `yaml:"update"`
	// Replicas runs that many copies of the plugin, NAME/1 … NAME/N
	// (docs/semantics.md, "Replicas"); zero (absent): one, named NAME.
	// A loaded Spec holds the replicas, each with Replicas zero.
	Replicas int `yaml:"replicas"`

	// Of is the name the plugins file gives a replica: api, of api/2;
	// empty for a plugin that is no replica. Its fields are at
	// plugins.<Of> in the file.
	Of string `yaml:"-"`
	// Replica is a replica's number, from 1; zero for no replica.
	Replica int `yaml:"-"`
}

// FileName is the name the plugins file gives p, where its fields are:
// Of for a replica, else Name.
func (p *Plugin) FileName() string { return cmp.Or(p.Of, p.Name) }

// Mount shows a worker a host directory at a guest path.
type Mount struct {
	// Host is the directory, relative to the spec's directory.
	Host string `yaml:"host"`
	// Guest is the absolute path the worker sees it at.
	Guest string `yaml:"guest"`
	// Writable lets the worker change it; mounts are read-only otherwise.
	Writable bool `yaml:"writable"`
}

// Ready is a readiness check: at most one probe (launch.Kinds), with or
// without Log, and at least one of the two.
type Ready struct {
	// Log is an RE2 regular expression: ready once a line of the plugin's
	// output matches.
	Log string `yaml:"log"`
	// Probe is the check that must pass (launch.Probe): its fields are
	// written in the ready block itself.
	launch.Probe `yaml:",inline"`
	// Timeout bounds the wait for readiness (default 30 seconds).
	Timeout Duration `yaml:"timeout"`
}

// Health is a liveness check: exactly one probe (launch.Kinds), tried
// every Interval once StartPeriod has passed (docs/semantics.md, "Health
// checks").
type Health struct {
	// Probe is the check (launch.Probe): its fields are written in the
	// health block itself.
	launch.Probe `yaml:",inline"`
	// Interval is the time between the starts of two checks (default 10
	// seconds).
	Interval Duration `yaml:"interval"`
	// Timeout bounds one check (default 5 seconds).
	Timeout Duration `yaml:"timeout"`
	// Failures is how many failed checks in a row make the plugin
	// unhealthy, and replaced (default 3).
	Failures int `yaml:"failures"`
	// StartPeriod is how long after the start no check runs (default 0).
	StartPeriod Duration `yaml:"startPeriod"`
}

// Update is how a plugin is replaced.
type Update struct {
	// Order is StopFirst (the default when empty) or StartFirst.
	Order string `yaml:"order"`
	// Overlap says that two processes of the plugin can run at once
	// without held sockets (it binds its own port with SO_REUSEPORT, say):
	// start-first is refused for a plugin without listen: unless it says
	// so.
	Overlap bool `yaml:"overlap"`
	// OnFailure is what a replacement whose new process fails does:
	// FailStop (the default when empty) or FailRollback.
	OnFailure string `yaml:"onFailure"`
	// Deadline bounds the time the new process has to be ready, and
	// healthy when it has a health check; zero: its ready timeout alone.
	Deadline Duration `yaml:"deadline"`
	// Parallel is how many replicas a rolling replacement replaces at
	// once (default 1): the next starts once one of them is done.
	Parallel int `yaml:"parallel"`
}

// What a failed replacement does.
const (
	FailStop     = "stop"     // the new process is stopped, and the plugin is failed (its retries go on)
	FailRollback = "rollback" // the new process is stopped, and the previous version runs
)

// FailureModes are the values of update.onFailure.
var FailureModes = []string{FailStop, FailRollback}

// RollsBack reports whether a failed replacement of p runs its previous
// version again.
func (p *Plugin) RollsBack() bool { return p.Update != nil && p.Update.OnFailure == FailRollback }

// The orders of a replacement.
const (
	StopFirst  = "stop-first"  // the old process stops, then the new one starts
	StartFirst = "start-first" // the new one starts beside it, and once it is ready the old one stops
)

// UpdateOrders are the values of update.order.
var UpdateOrders = []string{StopFirst, StartFirst}

// StartsFirst reports whether p is replaced start-first.
func (p *Plugin) StartsFirst() bool { return p.Update != nil && p.Update.Order == StartFirst }

// Retry is the restart schedule of a plugin that exits on its own:
// Delay, then Delay×Factor, ..., capped at Max, at most Attempts times.
type Retry struct {
	Delay  Duration `yaml:"delay"`  // default 1 second
	Factor float64  `yaml:"factor"` // default 2
	Max    Duration `yaml:"max"`    // default 1 minute
	// Attempts is the number of restarts before the plugin stays failed;
	// zero means no limit.
	Attempts int `yaml:"attempts"`
}

// Elect configures the election of a floating plugin: through a lease
// file in a shared directory (Dir), or on etcd (Etcd) (docs/semantics.md,
// "Floating plugins: the election", which gives the defaults).
type Elect struct {
	// Dir is the shared directory that holds the lease and lock files,
	// relative to the spec's directory; empty with Etcd.
	Dir string `yaml:"dir"`
	// Port is the port the plugin serves on; the leader's address is
	// published with it.
	Port int `yaml:"port"`
	// Address is the HOST:PORT published for consumers; it defaults to this
	// machine's address and Port.
	Address   string   `yaml:"address"`
	TTL       Duration `yaml:"ttl"`       // default 15 seconds
	Renew     Duration `yaml:"renew"`     // default 3 seconds
	Poll      Duration `yaml:"poll"`      // default 2 seconds
	LockStale Duration `yaml:"lockStale"` // default 15 seconds
	// Probe: the leader checks at every renewal that its plugin answers
	// (docs/semantics.md, "Floating plugins: the election"). Default: on
	// when Port is set.
	Probe *bool `yaml:"probe"`
	// ProbeFailures is how many failed probes in a row make the leader
	// replace its plugin (default 3).
	ProbeFailures int `yaml:"probeFailures"`
	// StartFailures is how many failed starts of its plugin in a row make
	// the leader release the lease (default 3).
	StartFailures int `yaml:"startFailures"`
	// Etcd, instead of Dir, runs the election on etcd (docs/semantics.md,
	// "Floating plugins: the election").
	Etcd *Etcd `yaml:"etcd"`
}

// Etcd is an election on etcd: a session whose lease the leader keeps
// alive, and the candidates' keys under Prefix + instance + "/".
type Etcd struct {
	// Endpoints are the servers' client URLs (http:// or https://).
	Endpoints []string `yaml:"endpoints"`
	// Prefix is the key prefix of graft's elections (default /graft/elect/).
	Prefix string `yaml:"prefix"`
	// SessionTTL is the session's lease, whole seconds (default 15
	// seconds): a leader that stops keeping it alive is replaced that long
	// after its last keepalive. It plays the part of ttl.
	SessionTTL Duration `yaml:"sessionTTL"`
	// TLS, when set, connects over TLS. Paths are relative to the spec's
	// directory.
	TLS *EtcdTLS `yaml:"tls"`
	// Username, with the password in PasswordFile, authenticates to etcd.
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"passwordFile"`
}

// EtcdTLS is how the host connects to etcd over TLS.
type EtcdTLS struct {
	// CA is a PEM file of the certificates that sign the servers'; empty
	// means the system's roots.
	CA string `yaml:"ca"`
	// Cert and Key are the host's client certificate and its key.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// LeaseTTL is how long a leader that stops renewing keeps its term: ttl,
// or the etcd session's TTL.
func (e *Elect) LeaseTTL() time.Duration {
	if e.Etcd != nil {
		return e.Etcd.SessionTTL.Std()
	}
	return e.TTL.Std()
}

// Backend names where the election runs: "etcd" or "file".
func (e *Elect) Backend() string {
	if e.Etcd != nil {
		return "etcd"
	}
	return "file"
}

// Probing reports whether the leader probes its plugin.
func (e *Elect) Probing() bool {
	if e.Probe != nil {
		return *e.Probe
	}
	return e.Port != 0
}

// Path resolves path as the spec means it: relative to the plugins file's
// directory Dir, unless absolute. The spec's paths (a plugin's dir, a
// module, a mount, an election's directory, a token or certificate file)
// all resolve through it.
func (s *Spec) Path(path string) string { return Resolve(s.Dir, path) }

// Resolve is path relative to dir, unless absolute: Spec.Path for a
// spec's directory dir.
func Resolve(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

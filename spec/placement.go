package spec

// Placement says where a plugin's process lives (README.md, the table of
// run: values; docs/semantics.md, "Identity and generations").
type Placement string

// The placements a plugin can have.
const (
	Local    Placement = "local"    // child process of the host
	Worker   Placement = "worker"   // WebAssembly module inside the host
	OnRunner Placement = "runner"   // process on a graft runner, under a lease
	Floating Placement = "floating" // on exactly one of the hosts sharing elect.dir
)

// Traits is what a placement is, as the rules of plugins.yaml and graft's
// plans need to know it: one row of the table below. What a placement
// may not have, it says why not, and the loader quotes that.
type Traits struct {
	// Module: the plugin runs a WebAssembly module (module, args, mounts,
	// memory), not a command.
	Module bool
	// Instance: it has a stable instance name (instance, by default
	// <project>.<plugin>) rather than a fresh UUID each start.
	Instance bool
	// Runner: it runs on a runner the spec names (runner); its
	// executable is that machine's when the runner has an address.
	Runner bool
	// Elect: it is elected onto one of the hosts that declare it (elect),
	// and its consumers get its leader's address in their environment.
	Elect bool
	// Reload: onChange: reload reloads the running process in place
	// (runtime.Reloader); elsewhere such a change replaces it.
	Reload bool
	// LiveHealth: a change of health applies to the running process,
	// whose checks change where they run, in the host or on its runner
	// (runtime.HealthSetter); elsewhere it replaces the plugin.
	LiveHealth bool
	// Why a plugin of the placement may not have these; "" where it may.
	NoSignal   string // stopSignal
	NoDir      string // dir
	NoReload   string // a files entry with onChange: reload
	NoExec     string // an exec health check
	NoHealth   string // health
	NoOnce     string // once
	NoProc     string // user, group, umask and limits
	NoTTY      string // tty
	NoListen   string // listen
	NoUpdate   string // update
	NoReplicas string // replicas
}

// placements is the table: a row per placement, in the order the
// documentation gives them. A new placement is a row here, and its
// package under runtime/ with its row in the host's list (host/placements.go).
var placements = []struct {
	run Placement
	Traits
}{
	{Local, Traits{Reload: true, LiveHealth: true}},
	{Worker, Traits{Module: true,
		NoSignal: "a worker gets no signal: its graceful stop closes its stdin",
		NoDir:    "a worker has no working directory: it sees only its mounts",
		NoReload: "a worker cannot reload: it gets no signals; use replace",
		NoExec:   "a worker has no process to run a command beside; check it with tcp or http",
		NoProc:   "a worker has no process of its own to give a user, group, umask or limits: it runs inside the host",
		NoTTY:    "a worker has no process of its own to give a terminal: its output reaches its log without one",
		NoListen: "a worker has no process of its own to hand a socket to: it runs inside the host"}},
	{OnRunner, Traits{Instance: true, Runner: true, Reload: true, LiveHealth: true}},
	{Floating, Traits{Instance: true, Elect: true, Reload: true,
		NoHealth:   "not for floating plugins: their leader restarts them, and a replacement would give up the lead",
		NoOnce:     "a floating plugin runs on whichever host leads and cannot run once",
		NoListen:   "not for floating plugins: its leader's host changes, and with it the socket's",
		NoUpdate:   "not for floating plugins: only their leader may run them",
		NoReplicas: "not for floating plugins: one host, their leader, runs the one process"}},
}

// Placements lists every placement, in the order the documentation gives
// them.
var Placements = func() []Placement {
	out := make([]Placement, len(placements))
	for i, row := range placements {
		out[i] = row.run
	}
	return out
}()

// Traits is p's row of the table; the zero Traits for a placement that
// is none.
func (p Placement) Traits() Traits {
	for _, row := range placements {
		if row.run == p {
			return row.Traits
		}
	}
	return Traits{}
}

func placementNames() []string {
	names := make([]string, len(Placements))
	for i, p := range Placements {
		names[i] = string(p)
	}
	return names
}

// Here reports whether a plugin of the placement runs a process on the
// machine of the host that loads the spec (local, floating), whose user
// database resolves its user and group, and whose limits bound its own.
func (t Traits) Here() bool { return !t.Module && !t.Runner }

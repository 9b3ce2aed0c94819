// Package statedir names the files and directories of graft's state dirs,
// the host's and the runner's, each once, and keeps their stamp: the
// format of each and the graft that wrote it (docs/state-dir.md,
// docs/runner-api.md "The state dir").
package statedir

// The host's state dir.
const (
	HostLock  = "host.lock"    // held (flock) by the one host; holds its pid
	Applied   = "applied.json" // the last applied spec
	Completed = "completed.json"
	Logs      = "logs"       // one rotated log per plugin
	WasmCache = "wasm-cache" // compiled WebAssembly modules, by content
	// Digests caches the content digests of the files specs name, by
	// stat, one table per path: the host's, and graft plan's and graft
	// validate's, when they can trust it. The host prunes it to the
	// files of its applied spec (docs/state-dir.md, "The digest cache").
	Digests   = "digests"
	DigestKey = "digest.key" // the host's digest key, mode 0600
	// Instances records each local process the host started, by its
	// invocation id, from before its start until it is gone.
	Instances  = "instances"
	HostID     = "host-id"        // what tells two hosts of one machine apart
	Socket     = "host.sock"      // the control socket, when its path is short enough
	SocketLink = "host.sock.path" // else: the path of the socket, elsewhere
	HostLog    = "host.log"       // the output of a host started in the background
	// InitSocket is where the init of the host's PID namespace waits for
	// the next host once its own is gone, and InitLog where it records
	// the stops it made when none came (docs/upgrade.md).
	InitSocket     = "init.sock"
	InitSocketLink = "init.sock.path" // else: the path of the socket, elsewhere
	InitLog        = "init.log"
	// Terms are the floating plugins' terms a host led when it executed
	// a new program (graft upgrade), which takes them back.
	Terms = "terms.json"
	// EmbeddedRunner and EmbeddedSocket are the state and the socket of
	// the runner embedded in the host.
	EmbeddedRunner = "runner"
	EmbeddedSocket = "runner.sock"
	// Sockets records the held sockets of a daemon that executes its next
	// program in its process, for that program (the host's, and a
	// runner's).
	Sockets = "sockets.json"
	// RunnerSessions records the session the host holds with each runner
	// of its own, to resume it after a restart (docs/upgrade.md).
	RunnerSessions = "runner-sessions.json"
)

// A runner's state dir.
const (
	RunnerLock = "runner.lock" // held (flock) by the one runner; holds its pid
	Journal    = "journal"     // the generations and records, appended
	// Handover is what a runner that executes its next program in its
	// process leaves that program: its sessions and their processes, which
	// the init of its namespace keeps meanwhile (docs/upgrade.md).
	Handover = "handover.json"
	// Generations and Records are the layout of older runners, folded
	// into the journal at open.
	Generations = "generations" // <escaped instance>: its last generation
	Records     = "records"     // <escaped instance>.json: its process that may run
)

// Package runnerapi is the runner's HTTP API (docs/runner-api.md): its
// requests, answers, events and error kinds, shared by the runner and the
// host's side of it (runtime/remote), which links nothing of the daemon.
package runnerapi

import (
	"net/http"
	"time"

	"github.com/graftland/graft/internal/errkind"

	"github.com/graftland/graft/launch"
)

// The types of the runner's HTTP API, /v1 (docs/runner-api.md). Within
// /v1 fields are only ever added.

// DefaultLease is a session's lease when neither the host nor the runner
// sets one (docs/semantics.md, "Windows and defaults").
const DefaultLease = 15 * time.Second

// MaxBody bounds a request body.
const MaxBody = 1 << 20

// Protocol is the number of the runner API's protocol that this graft
// speaks, from 1: every request of a host carries it, with graft's
// version, and so does every answer of a runner (docs/runner-api.md,
// "Versions"). It grows by one with each change to what a host may send
// that a runner of the previous protocol would not understand (a field,
// a route, a new meaning), so that such a runner refuses the request,
// naming both versions, rather than misread it.
const Protocol = 2

// The kinds of error answers (docs/runner-api.md, "Errors"), each with
// the HTTP status of its answer (internal/errkind).
const (
	KindBadRequest   = errkind.BadRequest   // 400
	KindUnauthorized = errkind.Unauthorized // 401
	KindNoSession    = "no-session"         // 404
	KindNoInstance   = "no-instance"        // 404
	KindUnconfirmed  = "unconfirmed"        // 409
	// KindBusy: another start or stop of the instance is under way (a
	// 409); the request did nothing, and may be sent again.
	KindBusy        = "busy"         // 409
	KindExhausted   = "exhausted"    // 409
	KindStartFailed = "start-failed" // 422
	// KindReloadFailed: a reload's check failed, or its signal could not
	// be sent: nothing changed; it runs on.
	KindReloadFailed = "reload-failed" // 422
	// KindReloadUnconfirmed: a reload was signalled or its command ran,
	// and the process then failed its checks: its config is not known.
	KindReloadUnconfirmed = "reload-unconfirmed" // 422
	KindState             = "state"              // 500
	KindInternal          = errkind.Internal     // 500
)

var (
	_ = errkind.Define(KindNoSession, http.StatusNotFound)
	_ = errkind.Define(KindNoInstance, http.StatusNotFound)
	_ = errkind.Define(KindUnconfirmed, http.StatusConflict)
	_ = errkind.Define(KindBusy, http.StatusConflict)
	_ = errkind.Define(KindExhausted, http.StatusConflict)
	_ = errkind.Define(KindStartFailed, http.StatusUnprocessableEntity)
	_ = errkind.Define(KindReloadFailed, http.StatusUnprocessableEntity)
	_ = errkind.Define(KindReloadUnconfirmed, http.StatusUnprocessableEntity)
	_ = errkind.Define(KindState, http.StatusInternalServerError)
)

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
	// Exit is how the process ended, on start-failed.
	Exit *Exit `json:"exit,omitempty"`
	// Generation is the generation a failed start took, when it took
	// one: the output events of that generation are all its process
	// wrote.
	Generation int64 `json:"generation,omitempty"`
}

// Outcome is how a stop ended (docs/semantics.md, "Outcomes").
type Outcome string

// The outcomes of a stop.
const (
	// Exited: the process stopped and its exit was confirmed.
	Exited Outcome = "Exited"
	// Killed: the process was killed and the kill confirmed.
	Killed Outcome = "Killed"
	// Unconfirmed: no one could confirm the exit; it may still run.
	Unconfirmed Outcome = "RemoteTerminationUnconfirmed"
)

// Exit is how a process ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int `json:"code"`
	// Signal names the signal that ended it, such as "SIGKILL".
	Signal string `json:"signal,omitempty"`
	// Error says what ended it when no exit status can.
	Error string `json:"error,omitempty"`
	// Requested is true when a stop ended it, false when it ended on its
	// own.
	Requested bool `json:"requested"`
	// Lost is true when the runner lost track of it.
	Lost bool `json:"lost,omitempty"`
	// Outcome is Exited, or Killed when it had to be killed.
	Outcome Outcome `json:"outcome"`
	// Tail is the last lines of its output.
	Tail []string `json:"tail,omitempty"`
	// At is when its end was confirmed.
	At time.Time `json:"at"`
}

// OpenSession is the body of POST /v1/sessions.
type OpenSession struct {
	// Holder says who holds the session, for the runner's log and status.
	Holder string `json:"holder"`
	// LeaseMillis is the session's lease; 0 means the runner's.
	LeaseMillis int64 `json:"leaseMillis"`
}

// Session answers POST /v1/sessions.
type Session struct {
	Session     string `json:"session"`
	LeaseMillis int64  `json:"leaseMillis"`
	GraceMillis int64  `json:"graceMillis"`
	// Runner is the runner's version.
	Runner string `json:"runner"`
	// BootID is the runner machine's boot id.
	BootID string `json:"bootID"`
}

// Renewed answers POST /v1/sessions/{session}/renew.
type Renewed struct {
	LeaseMillis int64 `json:"leaseMillis"`
}

// Stopped is one process a session's end stopped.
type Stopped struct {
	Instance   string  `json:"instance"`
	Generation int64   `json:"generation"`
	Outcome    Outcome `json:"outcome"`
}

// Closed answers DELETE /v1/sessions/{session}.
type Closed struct {
	Stopped []Stopped `json:"stopped"`
}

// The types of events.
const (
	EventOutput = "output"
	EventExit   = "exit"
	EventPing   = "ping"
	// EventHealth is the result of one health check the runner ran of a
	// process (docs/runner-api.md, "Health checks").
	EventHealth = "health"
)

// Event is one line of GET /v1/sessions/{session}/events.
type Event struct {
	Type       string `json:"type"`
	Instance   string `json:"instance,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	Line       string `json:"line,omitempty"`
	Exit       *Exit  `json:"exit,omitempty"`
	// Health is a health event's result.
	Health *HealthResult `json:"health,omitempty"`
}

// HealthResult is one health check's result: passed, or Error says why
// not.
type HealthResult struct {
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
}

// Start is the body of POST /v1/instances/{instance}/start: the session
// and names the process belongs to, and the process itself, whose fields
// are the request's own (launch.Spec: command, env, inheritEnv, dir,
// stopSignal, ready and health). Health, when set, is checked on the
// runner from the start on, each result sent as a health event; the host
// counts the failures and decides.
type Start struct {
	Session string `json:"session"`
	Plugin  string `json:"plugin"`
	Project string `json:"project"`
	// Overlap leaves the instance's running process running beside the
	// new one (a start-first replacement): the host stops it, by its
	// generation, once the new one is ready; until then both are the
	// instance's. Refused (busy) while the process an earlier overlap
	// left running still runs.
	Overlap bool `json:"overlap,omitempty"`
	launch.Spec
}

// HoldSockets is the body of POST /v1/instances/{instance}/sockets: bind
// now, or keep, the sockets the instance's next start lists, before its
// host stops anything (docs/runner-api.md, "Held sockets"). Dir is the
// start's dir, which relative unix paths resolve in.
type HoldSockets struct {
	Session   string          `json:"session"`
	Dir       string          `json:"dir,omitempty"`
	Listen    []launch.Listen `json:"listen"`
	ListenKey string          `json:"listenKey,omitempty"`
}

// Started answers a start.
type Started struct {
	Instance   string    `json:"instance"`
	Generation int64     `json:"generation"`
	PID        int       `json:"pid"`
	StartedAt  time.Time `json:"startedAt"`
}

// Stop is the body of POST /v1/instances/{instance}/stop.
type Stop struct {
	Session               string `json:"session"`
	Generation            int64  `json:"generation"`
	ShutdownTimeoutMillis int64  `json:"shutdownTimeoutMillis,omitempty"`
	// Force skips the graceful stop, or cuts one under way short: the
	// interrupt at once, SIGKILL grace later.
	Force bool `json:"force,omitempty"`
}

// Reload is the body of POST /v1/instances/{instance}/reload: the running
// generation, and its process's new spec, of which the runner uses the
// reload, ready and health (docs/runner-api.md, "Reload").
type Reload struct {
	Session    string `json:"session"`
	Generation int64  `json:"generation"`
	launch.Spec
}

// Reloaded answers a reload that took.
type Reloaded struct {
	Instance   string `json:"instance"`
	Generation int64  `json:"generation"`
	PID        int    `json:"pid"`
}

// SetHealth is the body of POST /v1/instances/{instance}/health: the
// running generation's new health checks, none without Health
// (docs/runner-api.md, "Health checks").
type SetHealth struct {
	Session    string         `json:"session"`
	Generation int64          `json:"generation"`
	Health     *launch.Health `json:"health,omitempty"`
}

// HealthSet answers a change of health checks.
type HealthSet struct {
	Instance   string `json:"instance"`
	Generation int64  `json:"generation"`
}

// StopResult answers a stop once the exit is confirmed.
type StopResult struct {
	Instance   string  `json:"instance"`
	Generation int64   `json:"generation"`
	Outcome    Outcome `json:"outcome"`
	Exit       Exit    `json:"exit"`
}

// SessionStatus is one session in GET /v1/status.
type SessionStatus struct {
	Session string    `json:"session"`
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

// The statuses of an instance's process.
const (
	StatusRunning     = "running"
	StatusStopping    = "stopping"
	StatusUnconfirmed = "unconfirmed"
)

// InstanceStatus is one process in GET /v1/status.
type InstanceStatus struct {
	Instance   string    `json:"instance"`
	Generation int64     `json:"generation"`
	PID        int       `json:"pid"`
	Session    string    `json:"session,omitempty"`
	Status     string    `json:"status"`
	StartedAt  time.Time `json:"startedAt"`
}

// Status answers GET /v1/status.
type Status struct {
	Runner      string           `json:"runner"`
	PID         int              `json:"pid"`
	Since       time.Time        `json:"since"`
	LeaseMillis int64            `json:"leaseMillis"`
	GraceMillis int64            `json:"graceMillis"`
	Sessions    []SessionStatus  `json:"sessions"`
	Instances   []InstanceStatus `json:"instances"`
}

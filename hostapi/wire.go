// Package hostapi is the host's control API as its clients see it: the
// requests, answers and events that cross it, the errors that cross it
// with their types (docs/stopping.md), and the Go client.
//
// The control API is HTTP and JSON over the host's unix socket (and its
// optional TCP listener); it is versioned by path (/v1/...), and each
// request and answer names its sender's graft and protocol (Protocol).
// Applies answer with a stream of Messages, one JSON object a line, so
// the CLI shows progress as it happens.
//
// Its types are its own: the host converts its plans, events and errors
// to them at its edge (host/server), and a client links nothing of the
// daemon. A plan crosses in its documented JSON form (docs/plan-format.md),
// which package plan reads and writes.
package hostapi

import (
	"encoding/json"
	"time"
)

// MaxBody bounds a request body (a spec, or a saved plan with its spec),
// an answer that is one JSON value, and a line of an apply's stream.
//
// It is what a saved plan of a spec at spec.MaxSize (4 MiB) needs. Such a
// body carries the spec twice (the request's source and the plan's) and
// the plan, whose size grows with the plugins: a spec of 3.9 MB holding
// 42,000 plugins and 126,000 uses edges (bench.Spec) saves a plan of
// 21 MB, sent with its source as a body of 25 MB. A lower bound would
// refuse plans that graft plan --out writes; the host's memory is bounded
// instead by taking bodies over 1 MiB in turns, decoded as they stream
// (docs/security.md, "Memory").
const MaxBody = 32 << 20

// MaxLogLines bounds the lines a request for a plugin's log gets from its
// end.
const MaxLogLines = 1 << 20

// ApplyRequest asks the host to bring about a spec.
type ApplyRequest struct {
	// Source is the desired spec.
	Source Source `json:"source"`
	// Plan, when set, is a saved plan to carry out exactly, in its JSON
	// form (docs/plan-format.md); the host refuses it if the running
	// state changed since it was made.
	Plan json.RawMessage `json:"plan,omitempty"`
	// Restart names plugins to replace though unchanged (graft restart);
	// their consumers restart as for any replacement.
	Restart []string `json:"restart,omitempty"`
	// Once, with Restart, asks that each plugin named be a one-shot
	// (graft run): it runs again, planned like a restart.
	Once bool `json:"once,omitempty"`
	// Parallelism bounds the steps running at once; 0 is the default, 10.
	Parallelism int `json:"parallelism,omitempty"`
	// LockWait is how long to wait for an apply under way to finish, in
	// milliseconds; 0 fails at once.
	LockWait int64 `json:"lockWait,omitempty"`
	// Holder says who applies, for whoever finds the apply lock held.
	Holder string `json:"holder,omitempty"`
}

// MessageType says what a Message carries.
type MessageType string

// The messages of an apply's stream.
const (
	MsgPlan  MessageType = "plan"  // the plan being carried out
	MsgEvent MessageType = "event" // a step's progress
	MsgDone  MessageType = "done"  // the end, with every error
)

// Message is one line of an apply's stream.
type Message struct {
	Type MessageType `json:"type"`
	// Plan is the plan being carried out, in its JSON form
	// (docs/plan-format.md), on MsgPlan.
	Plan json.RawMessage `json:"plan,omitempty"`
	// Event is a step's progress, on MsgEvent.
	Event *Event `json:"event,omitempty"`
	// Errors are the apply's errors, on MsgDone, as text.
	Errors []string `json:"errors,omitempty"`
	// Failures are the same errors with their kinds, so the client gives
	// each its type back (errors.As finds a *runtime.CleanupError, a
	// *runtime.StartError, ..., in a *StepError, where the program links
	// the package of the type: internal/errkind).
	Failures []ErrorBody `json:"failures,omitempty"`
}

// LeaderInfo answers GET /v1/leader/{plugin}: a floating plugin's lease,
// as this host sees it.
type LeaderInfo struct {
	Plugin   string `json:"plugin"`
	Instance string `json:"instance"`
	// Backend is where the election runs: "file" (a lease file in Dir) or
	// "etcd" (the candidates' keys under Key, on Endpoints).
	Backend string `json:"backend,omitempty"`
	// Dir is the election's directory, on the file backend.
	Dir string `json:"dir,omitempty"`
	// Endpoints and Key: the etcd servers, and the prefix of the
	// candidates' keys.
	Endpoints []string `json:"endpoints,omitempty"`
	Key       string   `json:"key,omitempty"`
	// Holder, Address, Epoch, RenewCount and Released are the lease's.
	Holder     string `json:"holder"`
	Address    string `json:"address"`
	Epoch      int64  `json:"epoch"`
	RenewCount int64  `json:"renewCount"`
	Released   bool   `json:"released"`
	// AgeMillis is how long the lease file has looked unchanged to this
	// host, on its own clock; TTLMillis is how long the leader may go
	// without renewing it.
	AgeMillis int64 `json:"ageMillis"`
	TTLMillis int64 `json:"ttlMillis"`
	// Role is this host's part: leader, follower or candidate.
	Role string `json:"role"`
	// HostID is this host's id in the election.
	HostID string `json:"hostID"`
}

// PlanRequest asks the host for the plan of a spec against what it runs:
// POST /v1/plan, which graft plan uses when a host runs. The host makes
// it, since only it holds the digest key that the running state's digests
// of env values are keyed with.
type PlanRequest struct {
	// Source is the desired spec.
	Source Source `json:"source"`
}

// Source is a desired spec as it crosses the API: the plugins file's
// content, where it was read, and the variables its ${VAR}s use (the
// source of a saved plan too: docs/plan-format.md).
type Source struct {
	// File is the plugins file's path as it was given.
	File string `json:"file"`
	// Dir is the absolute directory relative paths of the spec resolve in.
	Dir string `json:"dir"`
	// YAML is the file's content.
	YAML string `json:"yaml"`
	// DigestKey is, for a plan saved without a host, the one-time key its
	// digests were made with.
	DigestKey string `json:"digestKey,omitempty"`
	// Vars are the variables YAML's ${VAR}s use, with their values, from
	// the environment of the graft command that sent it.
	Vars map[string]string `json:"vars,omitempty"`
}

// Event is one step's progress in an apply's stream.
type Event struct {
	Step Step `json:"step"`
	// Phase is where the step stands: began, succeeded, failed or
	// skipped.
	Phase string `json:"phase"`
	// Result is set when the step ended.
	Result Result `json:"result"`
	// Error says why the step failed or was skipped.
	Error string `json:"error,omitempty"`
	// Took is how long the step ran.
	Took time.Duration `json:"took"`
	At   time.Time     `json:"at"`
}

// The phases of a step in an Event.
const (
	Began     = "began"
	Succeeded = "succeeded"
	Failed    = "failed"
	Skipped   = "skipped"
)

// Step is one step of a plan: its id, op and plugin, and the steps it
// waits on as the plan's JSON gives them (docs/plan-format.md, "Steps").
type Step struct {
	ID     string          `json:"id"`
	Op     string          `json:"op"`
	Plugin string          `json:"plugin"`
	After  json.RawMessage `json:"after"`
}

// Result is what a step did.
type Result struct {
	// Outcome is how a stop ended: Exited, Killed or
	// RemoteTerminationUnconfirmed.
	Outcome string `json:"outcome,omitempty"`
	// Identity is what a start's plugin sees.
	Identity Identity `json:"identity"`
	PID      int      `json:"pid,omitempty"`
	// Cleanup is set on a stop that had to force its plugin and whose end
	// was confirmed: the step succeeded, with a warning (docs/stopping.md).
	Cleanup *Cleanup `json:"cleanup,omitempty"`
}

// Identity is what a plugin knows of itself: its instance and generation.
type Identity struct {
	ID         string `json:"id"`
	Generation int64  `json:"generation"`
}

// Cleanup is a forced stop: its outcome and what it had to do, each cause
// with its kind and fields (Err gives back the host's error).
type Cleanup struct {
	Plugin  string      `json:"plugin"`
	Outcome string      `json:"outcome"`
	Causes  []StopCause `json:"causes"`
}

// UpgradeRequest is the body of POST /v1/upgrade: replace the host's
// program (docs/upgrade.md).
type UpgradeRequest struct {
	// Binary is the new program's path on the host's machine; empty: the
	// path the host's program was started from.
	Binary string `json:"binary,omitempty"`
	// LockWait is how long to wait for an apply under way, in
	// milliseconds; 0 waits until it ends.
	LockWait int64  `json:"lockWait,omitempty"`
	Holder   string `json:"holder,omitempty"`
}

// UpgradeReport is the answer of POST /v1/upgrade, sent before the host
// executes the new program.
type UpgradeReport struct {
	PID    int    `json:"pid"`
	From   string `json:"from"`
	To     string `json:"to"`
	Binary string `json:"binary"`
	// Kept are the plugins whose processes run on, adopted by the new
	// program; Restarted those stopped now and started by it (workers,
	// runner and floating plugins), with Why when local ones are among
	// them.
	Kept      []string `json:"kept"`
	Restarted []string `json:"restarted"`
	Why       string   `json:"why,omitempty"`
}

package host

import (
	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/plan"
)

// The control API is HTTP and JSON over the host's unix socket; it is
// versioned by path (/v1/...). Applies answer with a stream of Messages,
// one JSON object a line, so the CLI shows progress as it happens.

// ApplyRequest asks the host to bring about a spec.
type ApplyRequest struct {
	// Source is the desired spec.
	Source plan.Source `json:"source"`
	// Plan, when set, is a saved plan to carry out exactly; the host
	// refuses it if the running state changed since it was made.
	Plan *plan.Plan `json:"plan,omitempty"`
	// Restart names plugins to replace though unchanged (graft restart);
	// their consumers restart as for any replacement.
	Restart []string `json:"restart,omitempty"`
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
	Type  MessageType  `json:"type"`
	Plan  *plan.Plan   `json:"plan,omitempty"`
	Event *apply.Event `json:"event,omitempty"`
	// Errors are the apply's errors, on MsgDone.
	Errors []string `json:"errors,omitempty"`
}

// ErrorBody is the body of an error answer.
type ErrorBody struct {
	Error string `json:"error"`
	// Kind lets the client give a refusal its own error type.
	Kind string `json:"kind,omitempty"`
	// Hint tells the operator what to do.
	Hint string `json:"hint,omitempty"`
}

// The kinds of refusals.
const (
	KindLocked = "locked" // another apply holds the apply lock
	KindStale  = "stale"  // a saved plan no longer matches what runs
	KindSpec   = "spec"   // the spec is bad
	KindNoSpec = "nospec" // nothing was applied yet (graft restart)
)

// LeaderInfo answers GET /v1/leader/{plugin}: a floating plugin's lease,
// as this host sees it.
type LeaderInfo struct {
	Plugin   string `json:"plugin"`
	Instance string `json:"instance"`
	// Dir is the election's directory.
	Dir string `json:"dir"`
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

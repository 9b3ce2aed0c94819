package runtime

import (
	"time"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/spec"
)

// Status is where a supervised plugin stands.
type Status string

// The statuses of a supervised plugin.
const (
	Starting Status = "starting"
	Running  Status = "running"
	Failed   Status = "failed" // exited on its own or failed to start; a retry may be due
	Stopping Status = "stopping"
	Stopped  Status = "stopped" // stopped on purpose
	// Standby: a floating plugin another host leads.
	Standby Status = "standby"
	// StopUnconfirmed: a stop no one could confirm; the plugin may still
	// be running. Stopping it again asks again.
	StopUnconfirmed Status = "unconfirmed"
	// Completed: a one-shot plugin that exited 0. It is not retried.
	Completed Status = "completed"
)

// State is a snapshot of a supervised plugin.
type State struct {
	Status   Status
	Identity Identity
	PID      int
	// Since is when the plugin entered Status.
	Since time.Time
	// Restarts counts the starts after the first.
	Restarts int
	// LastError is why the plugin last failed, with its exit and last
	// output; empty when it has not.
	LastError string
	// NextRetry is when the next restart is due; zero when none is.
	NextRetry time.Time
	// Role is a floating plugin's part in its election: leader, follower
	// or candidate; empty for others.
	Role string
	// Address is where a floating plugin's leader serves.
	Address string
	// Epoch is the epoch of a floating plugin's leader, as this host
	// last saw it; 0 before one is known.
	Epoch int64
	// Health is the verdict of its health check: empty without one.
	Health health.Status
	// HealthError is the error of its last failed health check.
	HealthError string
	// Backend is where a floating plugin's election runs: file or etcd.
	Backend string
}

// Reporter is a Handle that reports a state of its own while it runs: a
// floating plugin's, which runs its process only while its host leads
// (restarting it there) and stands by otherwise. A Supervisor's State is
// then the handle's.
type Reporter interface {
	Handle
	State() State
}

// Retrier is a Placement whose plugins are retried even when their spec
// says no retry: a floating placement, whose plugin must go on
// campaigning after a start that saw no leader in time.
type Retrier interface {
	Placement
	// DefaultRetry is the retry of a plugin that has none.
	DefaultRetry() *spec.Retry
}

package hostapi

import (
	"fmt"
	"time"
)

// The errors by which the host refuses a request, which cross the API with
// their types (ErrorBody).

// LockedError is a refused apply: another holds the apply lock.
type LockedError struct {
	Holder string    `json:"holder"`
	Since  time.Time `json:"since"`
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("another apply is under way: %s, since %s (%s ago)",
		e.Holder, e.Since.Format("15:04:05"), time.Since(e.Since).Round(time.Second))
}

// Hint tells the operator what to do about it.
func (e *LockedError) Hint() string { return "wait for it, or pass --lock-timeout to wait here" }

// StaleError is a saved plan made against a state that has changed.
type StaleError struct {
	Reason string `json:"reason"`
}

func (e *StaleError) Error() string { return "stale plan: " + e.Reason }

// Hint tells the operator what to do about it.
func (e *StaleError) Hint() string { return "make a new plan with graft plan --out" }

// NothingAppliedError is a restart asked of a host that has applied
// nothing yet.
type NothingAppliedError struct{}

func (*NothingAppliedError) Error() string { return "nothing was applied on this host yet" }

// UpgradeRefusedError is a new program that cannot take over the host's
// state dir (graft upgrade): the host goes on unchanged.
type UpgradeRefusedError struct {
	Binary string `json:"binary"`
	Why    string `json:"why"`
}

func (e *UpgradeRefusedError) Error() string {
	return fmt.Sprintf("the new program %s cannot take over: %s; the host goes on unchanged", e.Binary, e.Why)
}

// Hint tells the operator what to do about it.
func (e *UpgradeRefusedError) Hint() string {
	return "check the new program with: " + e.Binary + " version"
}

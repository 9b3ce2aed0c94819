package local

import (
	"context"
	"syscall"
	"time"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
)

// LeftoverLadder is the stop of what a previous daemon left running, found
// by its records (docs/stopping.md, "When the host dies"): the ladder
// forced from the start, with no exit window: SIGTERM to every member,
// SIGKILL killAfter later, then up to killWait for their end. Run reports
// Killed once every member is gone, Unconfirmed when one survives
// SIGKILL; a caller may set the ladder's hooks (Killing) before it runs it.
func LeftoverLadder(members []proc.Member, killAfter time.Duration) runtime.Ladder {
	signal := func(sig syscall.Signal) func() error {
		return func() error {
			for _, m := range members {
				m.Signal(sig)
			}
			return nil
		}
	}
	return runtime.Ladder{
		Timing:    runtime.Timing{KillAfter: killAfter},
		Terminate: signal(syscall.SIGTERM),
		Kill:      signal(syscall.SIGKILL),
		Gone:      membersGone(members),
		KillWait:  killWait,
	}
}

// membersGone is a Ladder's Gone for a list of processes: it waits up to
// d, or until cut is closed, for every member to be gone.
func membersGone(members []proc.Member) func(time.Duration, <-chan struct{}) bool {
	return func(d time.Duration, cut <-chan struct{}) bool {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		if cut != nil {
			go func() {
				select {
				case <-cut:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		return proc.WaitMembers(members, ctx.Done())
	}
}

// killWait bounds the wait after SIGKILL, which only a process stuck in
// the kernel survives.
const killWait = 10 * time.Second

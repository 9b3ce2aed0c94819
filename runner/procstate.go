package runner

// procState is where a process of the runner is in its life. Its
// transitions, all in to, under the runner's mu:
//
//	starting ──► running ──► stopping ──► interrupted ──► unconfirmed
//	                │            │             │               │
//	                └────────────┴─────────────┴───────────────┴──► exited
//
// starting: spawned, its start not answered yet (in Runner.starting).
// running: the instance's current process. stopping: a stop began before
// it exited, in its graceful part. interrupted: the graceful part is over
// (or was skipped): its end is Killed. unconfirmed: still there killWait
// after SIGKILL; replacements are refused until it is gone. exited: its
// exit is confirmed.
type procState int

const (
	procStarting procState = iota
	procRunning
	procStopping
	procInterrupted
	procUnconfirmed
	procExited
)

// next lists the states each state may move to.
var next = map[procState][]procState{
	procStarting:    {procRunning},
	procRunning:     {procStopping, procExited},
	procStopping:    {procInterrupted, procExited},
	procInterrupted: {procUnconfirmed, procExited},
	procUnconfirmed: {procExited},
}

// to moves p to state s if its state may move there, and reports whether
// it did. A move it may not make is a race lost to its exit (a stop
// interrupting a process whose exit was just confirmed) and changes
// nothing. r.mu is held.
func (p *process) to(s procState) bool {
	for _, ok := range next[p.state] {
		if ok == s {
			p.state = s
			return true
		}
	}
	return false
}

// requested reports whether a stop began before the process exited.
func (s procState) requested() bool {
	return s == procStopping || s == procInterrupted || s == procUnconfirmed
}

// forced reports whether the graceful part of its stop is over: its end
// is Killed.
func (s procState) forced() bool { return s == procInterrupted || s == procUnconfirmed }

package runtime

// NewCompleted returns a Supervisor of req on p for a one-shot plugin that
// completed under an earlier host of the same state dir, as that host
// recorded it: its status is Completed from the start, with st's
// identity, since, restarts and last error, and nothing runs. Like any
// completed Supervisor it is never started again: running the plugin again
// takes a new one (docs/semantics.md, "One-shot plugins"). p may be nil,
// since nothing is started on it; a Stop ends at once.
func NewCompleted(p Placement, req Request, st State) *Supervisor {
	s := NewSupervisor(p, req)
	s.state = State{
		Status:    Completed,
		Identity:  st.Identity,
		Since:     st.Since,
		Restarts:  st.Restarts,
		LastError: st.LastError,
	}
	s.started = true // it ran: every condition on it was reached
	return s
}

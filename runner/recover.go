package runner

import (
	"fmt"
	"os"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
)

// recoverRecords deals with the records a previous runner left: those of
// processes that are gone are removed; the instance of each that may
// still run refuses starts until recover has stopped it. It runs in Open,
// before anything is served.
func (r *Runner) recoverRecords() error {
	recs, bad, err := r.state.records()
	if err != nil {
		return fmt.Errorf("read the records: %w", err)
	}
	if err := r.state.notCompacted; err != nil {
		r.log.Warn("the journal could not be rewritten: appends go on in it as it was", "err", err)
	}
	for _, path := range bad {
		r.log.Error("removing a record that cannot be read: whatever it named is not looked for", "path", path)
		os.Remove(path)
	}
	// One look at every process's environment for all the records: a
	// look for each would take seconds with a thousand records.
	marks := make([]string, len(recs))
	for i, rec := range recs {
		marks[i] = markOf(rec)
	}
	marked, err := proc.MarkedBy(marks)
	if err != nil {
		r.log.Warn("look for the processes of the records", "err", err)
	}
	for _, rec := range recs {
		members := r.recorded(rec, marked[markOf(rec)])
		log := r.log.With("instance", rec.Instance, "generation", rec.Generation, "pid", rec.PID)
		if len(members) == 0 {
			r.metrics.recoveries.WithLabelValues(recoveredGone).Inc()
			log.Info("a recorded process is gone")
			if err := r.state.removeRecord(rec.Instance, rec.Generation); err != nil {
				log.Warn("remove a record", "err", err)
			}
			continue
		}
		log.Warn("a recorded process may still run: stopping it before its instance starts again", "processes", len(members))
		r.instance(rec.Instance).recovered = &rec
		r.wg.Add(1)
		go r.recover(rec, members)
	}
	return nil
}

// findRecorded lists what lives of a recorded process: itself, if its pid
// names a process of the same boot and start time, and every process
// carrying its invocation id. A pid that names another process is never
// in the list.
func (r *Runner) findRecorded(rec record) []proc.Member {
	marked, err := proc.Marked([]string{markOf(rec)})
	if err != nil {
		r.log.Warn("look for the processes of a record", "instance", rec.Instance, "err", err)
	}
	return r.recorded(rec, marked)
}

// markOf is what the environment of rec's processes holds.
func markOf(rec record) string { return EnvInvocation + "=" + rec.Invocation }

// recorded is findRecorded with the processes carrying rec's invocation
// id found already: marked.
func (r *Runner) recorded(rec record, marked []proc.Member) []proc.Member {
	var out []proc.Member
	seen := map[int]bool{}
	if rec.PID != 0 && rec.BootID != "" && rec.BootID == r.bootID {
		if m, ok := proc.Lookup(rec.PID, rec.StartTime); ok {
			out = append(out, m)
			seen[m.Pid] = true
		}
	}
	for _, m := range marked {
		if !seen[m.Pid] {
			out = append(out, m)
			seen[m.Pid] = true
		}
	}
	return out
}

// recover stops what lives of a recorded process by the ladder of a
// leftover (local.LeftoverLadder) with grace for its KillAfter: SIGTERM,
// SIGKILL grace later, then up to killWait for its end, and past it the
// wait until it is gone; then looks again, for what it
// forked meanwhile. Once nothing is left its instance may start again.
// Whatever survives SIGKILL keeps the instance refusing starts until it
// is gone or the runner closes.
func (r *Runner) recover(rec record, members []proc.Member) {
	defer r.wg.Done()
	log := r.log.With("instance", rec.Instance, "generation", rec.Generation, "pid", rec.PID)
	for round := 0; len(members) > 0; round++ {
		l := local.LeftoverLadder(members, r.opt.Grace)
		l.KillWait = killWait
		l.Killing = func() {
			log.Info("killing a recorded process: still running after the interrupt", "grace", r.opt.Grace)
		}
		if outcome, _ := l.Run(); outcome == runtime.Unconfirmed {
			log.Error("a recorded process is still running after SIGKILL: its instance refuses starts until it is gone")
			if !proc.WaitMembers(members, r.ctx.Done()) {
				return // the runner closes; the record stays
			}
		}
		members = r.findRecorded(rec)
		if round > 10 && len(members) > 0 {
			// It forks faster than it is stopped: leave the record for
			// the next runner, and the instance refusing starts.
			log.Error("a recorded process keeps forking: giving up on it")
			return
		}
	}
	if err := r.state.removeRecord(rec.Instance, rec.Generation); err != nil {
		log.Warn("remove a record", "err", err)
	}
	r.mu.Lock()
	if inst := r.instances[rec.Instance]; inst != nil && inst.recovered != nil && inst.recovered.Invocation == rec.Invocation {
		inst.recovered = nil
	}
	r.mu.Unlock()
	r.metrics.recoveries.WithLabelValues(recoveredStopped).Inc()
	log.Info("a recorded process is gone: its instance may start again")
}

package runner

import (
	"fmt"
	"os"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
)

// recoverRecords deals with the records a previous runner left, those
// read from damaged entries of its journal included: those of processes
// that are gone are removed; the instance of each that may still run
// refuses starts until recover has stopped it. It runs in Open, before
// anything is served, and reports every damaged entry of the journal with
// what was found of its process (docs/runner-api.md, "The state dir").
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
	r.reportUnlooked()
	// The processes the last program handed over run on: their records
	// are theirs.
	taken := r.takeHandover(recs)
	if err := r.local.SocketsClaimed(); err != nil {
		r.log.Warn("take back the sockets the last program held", "err", err)
	}
	kept := recs[:0:0]
	for _, rec := range recs {
		if rec.salvaged || !taken[rec.Invocation] {
			kept = append(kept, rec)
		}
	}
	recs = kept
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
	// An instance's records, more than one when damaged entries named
	// other processes of it, are recovered together.
	for len(recs) > 0 {
		n := 1
		for n < len(recs) && recs[n].Instance == recs[0].Instance {
			n++
		}
		r.recoverInstance(recs[:n], marked)
		recs = recs[n:]
	}
	return nil
}

// recoverInstance recovers the records of one instance, with the
// processes carrying their invocation ids found already: marked.
func (r *Runner) recoverInstance(recs []record, marked map[string][]proc.Member) {
	var members []proc.Member
	var left []record
	found := map[string][]proc.Member{} // by invocation id
	for _, rec := range recs {
		ms := r.recorded(rec, marked[markOf(rec)])
		log := r.log.With("instance", rec.Instance, "generation", rec.Generation, "pid", rec.PID)
		if len(ms) == 0 {
			r.metrics.recoveries.WithLabelValues(recoveredGone).Inc()
			log.Info("a recorded process is gone")
			r.reportDamaged(rec, nil)
			if err := r.state.forget(rec); err != nil {
				log.Warn("remove a record", "err", err)
			}
			continue
		}
		log.Warn("a recorded process may still run: stopping it before its instance starts again", "processes", len(ms))
		found[rec.Invocation] = ms
		members = append(members, ms...)
		left = append(left, rec)
	}
	if len(left) == 0 {
		return
	}
	r.instance(left[0].Instance).recovered = &left[0]
	r.wg.Add(1)
	go r.recover(left, dedupe(members), found)
}

// dedupe is ms with each process once.
func dedupe(ms []proc.Member) []proc.Member {
	seen := map[int]bool{}
	out := ms[:0:0]
	for _, m := range ms {
		if !seen[m.Pid] {
			seen[m.Pid] = true
			out = append(out, m)
		}
	}
	return out
}

// findRecorded lists what lives of recorded processes: each itself, if
// its pid names a process of the same boot and start time, and every
// process carrying its invocation id. A pid that names another process is
// never in the list.
func (r *Runner) findRecorded(recs []record) []proc.Member {
	marks := make([]string, len(recs))
	for i, rec := range recs {
		marks[i] = markOf(rec)
	}
	marked, err := proc.MarkedBy(marks)
	if err != nil {
		r.log.Warn("look for the processes of a record", "instance", recs[0].Instance, "err", err)
	}
	var out []proc.Member
	for _, rec := range recs {
		out = append(out, r.recorded(rec, marked[markOf(rec)])...)
	}
	return dedupe(out)
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

// recover stops what lives of the recorded processes recs, of one
// instance, by the ladder of a leftover (local.LeftoverLadder) with grace
// for its KillAfter: SIGTERM, SIGKILL grace later, then up to killWait for
// its end, and past it the wait until it is gone; then looks again, for
// what it forked meanwhile. Once nothing is left its instance may start
// again. Whatever survives SIGKILL keeps the instance refusing starts
// until it is gone or the runner closes. found holds the processes first
// found of each record, by invocation id, for the report of a damaged
// one.
func (r *Runner) recover(recs []record, members []proc.Member, found map[string][]proc.Member) {
	defer r.wg.Done()
	rec := recs[0]
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
		members = r.findRecorded(recs)
		if round > 10 && len(members) > 0 {
			// It forks faster than it is stopped: leave the record for
			// the next runner, and the instance refusing starts.
			log.Error("a recorded process keeps forking: giving up on it")
			return
		}
	}
	for _, rec := range recs {
		if err := r.state.forget(rec); err != nil {
			log.Warn("remove a record", "err", err)
		}
		r.metrics.recoveries.WithLabelValues(recoveredStopped).Inc()
		r.reportDamaged(rec, found[rec.Invocation])
	}
	r.mu.Lock()
	if inst := r.instances[rec.Instance]; inst != nil && inst.recovered != nil && inst.recovered.Invocation == rec.Invocation {
		inst.recovered = nil
	}
	r.mu.Unlock()
	log.Info("a recorded process is gone: its instance may start again")
}

package runner

import (
	"context"
	"maps"
	"os"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
)

// maxLease is the longest lease a session may ask for: one that a
// time.Duration still holds in nanoseconds.
const maxLease = time.Duration(1<<63-1) / time.Millisecond * time.Millisecond

// openSession opens a session for holder with lease (0: the runner's).
func (r *Runner) openSession(req *runnerapi.OpenSession) (*runnerapi.Session, error) {
	lease := time.Duration(req.LeaseMillis) * time.Millisecond
	if req.LeaseMillis == 0 {
		lease = r.opt.Lease
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{
		id:     uuid.NewString(),
		holder: req.Holder,
		lease:  lease,
		procs:  map[*process]bool{},
		ctx:    ctx,
		cancel: cancel,
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cancel()
		return nil, errClosing
	}
	s.expires = time.Now().Add(lease)
	s.timer = time.AfterFunc(lease, func() { r.expire(s) })
	r.sessions[s.id] = s
	r.mu.Unlock()
	r.log.Info("session opened", "session", s.id, "holder", s.holder, "lease", lease)
	return &runnerapi.Session{
		Session:     s.id,
		LeaseMillis: lease.Milliseconds(),
		GraceMillis: r.opt.Grace.Milliseconds(),
		Runner:      r.opt.Version,
		BootID:      r.bootID,
	}, nil
}

// renew runs the session's lease again from now.
func (r *Runner) renew(id string) (*runnerapi.Renewed, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	if s == nil {
		return nil, noSession(id)
	}
	s.expires = time.Now().Add(s.lease)
	s.timer.Reset(s.lease)
	return &runnerapi.Renewed{LeaseMillis: s.lease.Milliseconds()}, nil
}

// expire ends a session whose lease ran out: its processes are
// interrupted, and killed after grace.
func (r *Runner) expire(s *session) {
	r.mu.Lock()
	if r.closed || s.ended {
		r.mu.Unlock()
		return
	}
	if r.handing != nil {
		// The next program ends it, if it ran out; or this one does, once
		// the handover did not go on (reopen).
		r.mu.Unlock()
		return
	}
	if left := time.Until(s.expires); left > 0 {
		// Renewed while the timer fired.
		s.timer.Reset(left)
		r.mu.Unlock()
		return
	}
	procs := r.detach(s)
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	r.metrics.expiries.Inc()
	var names []string
	for _, p := range procs {
		names = append(names, p.name)
	}
	sort.Strings(names)
	r.log.Warn("lease ran out", "holder", s.holder, "session", s.id, "lease", s.lease, "processes", names)
	for _, st := range r.stopAll(procs) {
		r.log.Info("stopped: its lease ran out", "instance", st.Instance, "generation", st.Generation,
			"session", s.id, "outcome", string(st.Outcome))
	}
}

// endSession ends a session at its holder's request, as if its lease ran
// out, and reports how its processes ended.
func (r *Runner) endSession(id string) (*runnerapi.Closed, error) {
	r.mu.Lock()
	s := r.sessions[id]
	if s == nil {
		r.mu.Unlock()
		return nil, noSession(id)
	}
	procs := r.detach(s)
	r.mu.Unlock()
	stopped := r.stopAll(procs)
	// Starts under way stop what they started, now that it ended.
	s.starts.Wait()
	r.mu.Lock()
	stopped = append(stopped, s.late...)
	r.mu.Unlock()
	r.log.Info("session ended", "session", s.id, "holder", s.holder, "stopped", len(stopped))
	return &runnerapi.Closed{Stopped: stopped}, nil
}

// detach ends s: it is forgotten, its stream ends, starts under it stop.
// It returns its processes, for the caller to stop. r.mu is held.
func (r *Runner) detach(s *session) []*process {
	s.ended = true
	s.timer.Stop()
	delete(r.sessions, s.id)
	s.cancel()
	s.close()
	var procs []*process
	ended := maps.Clone(s.sockets)
	if ended == nil {
		ended = map[string]bool{}
	}
	for p := range s.procs {
		procs = append(procs, p)
		ended[r.socketKey(p)] = true
	}
	// The sockets held for its instances close with the session, but those
	// that replicas of another session of the holder still use: a holder
	// that comes back opens another, and starts its instances again.
	for _, other := range r.sessions {
		for p := range other.procs {
			delete(ended, r.socketKey(p))
		}
		for key := range other.sockets {
			delete(ended, key)
		}
	}
	for key := range ended {
		r.local.ReleaseSockets(runtime.Request{Launch: launch.Spec{ListenKey: key}})
	}
	return procs
}

// socketKey is the key of p's held sockets (local.SocketKey).
func (r *Runner) socketKey(p *process) string {
	return local.SocketKey(r.request(p, &runtime.Identity{ID: p.name}))
}

// holdSockets carries out a request to hold the sockets of instance
// name's next start now (docs/runner-api.md): bound, or kept, under the
// key its start will hold them under; an address that cannot be bound
// fails it, and nothing changes.
func (r *Runner) holdSockets(name string, req *runnerapi.HoldSockets) (*struct{}, error) {
	r.mu.Lock()
	s, err := r.liveSession(req.Session)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	p := &process{name: name, session: s, start: runnerapi.Start{Spec: launch.Spec{Dir: req.Dir, Listen: req.Listen, ListenKey: req.ListenKey}}}
	lr := r.request(p, &runtime.Identity{ID: name}) // as its start's
	key := local.SocketKey(lr)
	if s.sockets == nil {
		s.sockets = map[string]bool{}
	}
	s.sockets[key] = true
	r.mu.Unlock()
	if err := r.local.HoldSockets(lr, req.Listen); err != nil {
		return nil, kindErr(runnerapi.KindStartFailed, "hold the sockets of %s: %v", name, err)
	}
	return &struct{}{}, nil
}

// liveSession is the session id names, for a start or a stop: none while
// the runner closes, or once the session ended. r.mu is held.
func (r *Runner) liveSession(id string) (*session, error) {
	if r.closed {
		return nil, errClosing
	}
	if s := r.sessions[id]; s != nil {
		return s, nil
	}
	return nil, noSession(id)
}

// stop carries out a stop request; see docs/runner-api.md.
func (r *Runner) stop(name string, req *runnerapi.Stop) (*runnerapi.StopResult, error) {
	r.mu.Lock()
	s, err := r.liveSession(req.Session)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	// The process may be another session's: its host lost that session
	// (its lease ran out, or is running out) and asks again through a new
	// one.
	inst := r.instances[name]
	var p *process
	if inst != nil {
		for _, q := range []*process{inst.cur, inst.old} {
			if q != nil && q.gen == req.Generation {
				p = q
			}
		}
	}
	if p == nil {
		defer r.mu.Unlock()
		return r.stopped(name, inst, req.Generation)
	}
	if p.state == procUnconfirmed {
		r.mu.Unlock()
		return nil, unconfirmed("stop", name, p.gen)
	}
	if inst.busy && req.Force && p.state.requested() {
		// It hurries the stop under way, and answers as it does.
		r.mu.Unlock()
		return r.answerStop(name, s, p, stopForced, 0)
	}
	if inst.busy {
		r.mu.Unlock()
		return nil, kindErr(runnerapi.KindBusy, "stop %s: another start or stop of %s is under way", name, name)
	}
	inst.busy = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		inst.busy = false
		r.mu.Unlock()
	}()
	mode := stopRequest
	switch {
	case req.Force:
		mode = stopForced
		if p.session != s {
			r.mu.Lock()
			p.notify = true // its exit goes to its own session's stream too
			r.mu.Unlock()
		}
	case p.session != s:
		mode = stopReplace // its exit goes to its own session's stream too
	}
	return r.answerStop(name, s, p, mode, time.Duration(req.ShutdownTimeoutMillis)*time.Millisecond)
}

// answerStop stops p, or joins the stop under way, and answers with its
// exit once confirmed.
func (r *Runner) answerStop(name string, s *session, p *process, mode stopMode, shutdown time.Duration) (*runnerapi.StopResult, error) {
	exit, ok := r.stopProcess(p, mode, shutdown)
	if !ok {
		return nil, unconfirmed("stop", name, p.gen)
	}
	r.log.Info("stopped", "instance", name, "generation", p.gen, "pid", p.pid, "session", s.id, "outcome", string(exit.Outcome))
	return &runnerapi.StopResult{Instance: name, Generation: p.gen, Outcome: runnerapi.Outcome(exit.Outcome), Exit: wireExit(exit)}, nil
}

// stopped answers a stop of generation gen of inst, which does not run:
// its exit if it is remembered; unconfirmed while a previous runner's
// process may still live; gone if the generation was handed out (a
// runner tracks every process it starts until it is confirmed gone);
// no-instance if it never was. inst is nil when this runner has not seen
// name since it started. r.mu is held.
func (r *Runner) stopped(name string, inst *instance, gen int64) (*runnerapi.StopResult, error) {
	if inst != nil {
		if exit, ok := inst.exitOf(gen); ok {
			return &runnerapi.StopResult{Instance: name, Generation: gen, Outcome: runnerapi.Outcome(exit.Outcome), Exit: wireExit(exit)}, nil
		}
		if rec := inst.recovered; rec != nil && rec.Generation == gen {
			return nil, unconfirmed("stop", name, gen)
		}
	}
	if _, ok := r.starting[runtime.Identity{ID: name, Generation: gen}]; ok {
		return nil, kindErr(runnerapi.KindBusy, "stop %s: generation %d of %s is starting", name, gen, name)
	}
	last, err := r.state.handedOut(name)
	if err != nil {
		return nil, kindErr(runnerapi.KindState, "stop %s: %v", name, err)
	}
	if gen < 1 || gen > last {
		return nil, kindErr(runnerapi.KindNoInstance, "stop %s: generation %d of %s was never started", name, gen, name)
	}
	exit := runnerapi.Exit{Code: -1, Error: "it ended earlier; how is not known to this runner", Outcome: runnerapi.Exited, At: time.Now()}
	return &runnerapi.StopResult{Instance: name, Generation: gen, Outcome: runnerapi.Exited, Exit: exit}, nil
}

// status is the runner's state for GET /v1/status.
func (r *Runner) status() *runnerapi.Status {
	st := &runnerapi.Status{
		Runner:      r.opt.Version,
		PID:         os.Getpid(),
		Since:       r.since,
		LeaseMillis: r.opt.Lease.Milliseconds(),
		GraceMillis: r.opt.Grace.Milliseconds(),
		Sessions:    []runnerapi.SessionStatus{},
		Instances:   []runnerapi.InstanceStatus{},
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		st.Sessions = append(st.Sessions, runnerapi.SessionStatus{Session: s.id, Holder: s.holder, Expires: s.expires})
	}
	add := func(p *process, status string) {
		st.Instances = append(st.Instances, runnerapi.InstanceStatus{Instance: p.name, Generation: p.gen, PID: p.pid,
			Session: p.session.id, Status: status, StartedAt: p.startedAt})
	}
	statusOf := func(p *process) string {
		switch {
		case p.state == procUnconfirmed:
			return runnerapi.StatusUnconfirmed
		case p.state.requested():
			return runnerapi.StatusStopping
		}
		return runnerapi.StatusRunning
	}
	for _, inst := range r.instances {
		for _, p := range []*process{inst.old, inst.cur} {
			if p != nil {
				add(p, statusOf(p))
			}
		}
		if rec := inst.recovered; inst.cur == nil && rec != nil {
			st.Instances = append(st.Instances, runnerapi.InstanceStatus{Instance: rec.Instance, Generation: rec.Generation,
				PID: rec.PID, Status: runnerapi.StatusUnconfirmed, StartedAt: rec.StartedAt})
		}
	}
	for _, p := range r.starting {
		if p.pid != 0 {
			add(p, runnerapi.StatusRunning)
		}
	}
	sort.Slice(st.Sessions, func(i, j int) bool { return st.Sessions[i].Session < st.Sessions[j].Session })
	sort.Slice(st.Instances, func(i, j int) bool { return st.Instances[i].Instance < st.Instances[j].Instance })
	return st
}

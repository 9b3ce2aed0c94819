package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// A host restarted or upgraded while its lease on a runner still runs
// resumes its session there (docs/upgrade.md): it renews the session by
// the id it recorded, follows its events again (the runner's second
// stream replaces the first), reads which processes run under it, and
// adopts them; nothing is stopped or started, and no generation is
// taken.

// Resumed is a process that runs under a resumed session.
type Resumed struct {
	Instance   string
	Generation int64
	PID        int
	StartedAt  time.Time
}

// ErrSessionOpen is a Resume of a Remote that holds a session already.
var ErrSessionOpen = errors.New("remote: a session is open already")

// Resume takes over session id, which an earlier host opened with the
// runner, and returns the processes running under it. A session the
// runner no longer has (its lease ran out, or the runner restarted) is
// none to resume: Resume returns nil and no error. A runner that cannot
// be reached is a *RemoteError. Resume is called before anything starts
// on the Remote: one that holds a session already refuses with
// ErrSessionOpen. Cancelling ctx abandons the resumption (the session
// then runs out on the runner, unless a later start opens another).
func (r *Remote) Resume(ctx context.Context, id string) ([]Resumed, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("remote: placement closed")
	}
	if s := r.sess; s != nil && s.ctx.Err() == nil {
		return nil, ErrSessionOpen
	}
	s, err := resumeSession(ctx, r, r.cfg, r.c, id)
	if err != nil || s == nil {
		return nil, err
	}
	var st runnerapi.Status
	if err := s.c.call(ctx, "read the runner's status", http.MethodGet, "/v1/status", nil, &st); err != nil {
		s.cancel(errors.New("resumption abandoned"))
		s.wg.Wait()
		return nil, err
	}
	r.sess = s
	var out []Resumed
	for _, in := range st.Instances {
		if in.Session == id && in.Status == "running" {
			out = append(out, Resumed{Instance: in.Instance, Generation: in.Generation, PID: in.PID, StartedAt: in.StartedAt})
		}
	}
	return out, nil
}

// resumeSession renews session id and, when the runner still has it,
// builds it as openSession does: its event stream first, then its
// renewals. It returns nil and no error when the runner answers the
// session is gone.
func resumeSession(ctx context.Context, r *Remote, cfg Config, c *client, id string) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	sent := time.Now()
	var renewed runnerapi.Renewed
	err := c.call(ctx, "resume the session", http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/renew", nil, &renewed)
	if sessionGone(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, events, err := newSession(ctx, r, cfg, c, id, renewed.LeaseMillis)
	if err != nil {
		if sessionGone(err) {
			return nil, nil // it ran out between the renewal and the stream
		}
		return nil, err
	}
	s.start(events, sent)
	r.log.Info("session resumed", "runner", cfg.Name, "session", s.id, "lease", s.lease)
	return s, nil
}

// Adopt makes the handle of p, a process under the session Resume
// resumed, for the plugin of req, as a start's answer makes one: the
// host's Supervisor adopts it (runtime.Supervisor.Adopt). Its exit comes
// through the session's events; one that came between the resumption
// and this call is kept for it, so none is missed.
func (r *Remote) Adopt(req runtime.Request, p Resumed) (runtime.Handle, error) {
	r.mu.Lock()
	s := r.sess
	r.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("adopt %s on runner %s: no session resumed", p.Instance, r.cfg.Name)
	}
	return s.track(req, p.Instance, runnerapi.Started{Instance: p.Instance, Generation: p.Generation, PID: p.PID, StartedAt: p.StartedAt}), nil
}

// Instance is the runner's instance name of the plugin of req: its
// instance, else PROJECT.NAME, as Start asks for.
func Instance(req runtime.Request) string {
	if req.Plugin != nil && req.Plugin.Instance != "" {
		return req.Plugin.Instance
	}
	return req.Project + "." + req.Name
}

// SessionID is the id of the session the Remote holds, or "" when it
// holds none that lives.
func (r *Remote) SessionID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sess; s != nil && s.ctx.Err() == nil {
		return s.id
	}
	return ""
}

// newHandle is a handle of the process inst, generation gen, of the
// session.
func (s *session) newHandle(req runtime.Request, inst string, st runnerapi.Started) *handle {
	return &handle{r: s.r, s: s, req: req, instance: inst, gen: st.Generation, pid: st.PID, tail: newTail(), done: make(chan struct{}),
		health: make(chan health.Result, 16)}
}

// Package remote is the placement of plugins that run on a graft runner
// (docs/semantics.md, "Runner sessions and leases"): processes on another
// machine, or on the runner embedded in the host, under a lease the host
// renews. It is the host's side of the runner's API (docs/runner-api.md).
//
// A Remote holds one session with its runner at a time. Everything the
// session started fails together when the session is lost (renewals
// fail until the lease, less the margin, runs out; the event stream
// breaks or goes quiet for a lease): each handle ends with a *RemoteError
// as its exit's error, and the next start opens a new session, whose
// start of the same instance makes the runner replace the old process,
// after confirming its exit, with a larger generation. A stop of a handle
// whose session was lost goes through the new session too: the runner
// answers for any process it started, whichever session started it.
package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// Config says how to reach one runner and hold a session with it.
type Config struct {
	// Name is the runner's name in the spec, for messages; default: the
	// address.
	Name string
	// Address is tcp://HOST:PORT or unix:///PATH.
	Address string
	// Token is sent with every request, when set.
	Token string
	// TLS, when set, makes TCP connections use TLS with this config.
	TLS *tls.Config
	// InsecurePlaintext allows plain TCP to a runner beyond loopback:
	// without it, and without TLS, the token goes only to a loopback far
	// end (docs/security.md, "Runner tokens").
	InsecurePlaintext bool
	// Lease is the session's lease; zero means the runner's own.
	Lease time.Duration
	// Margin is added to the lease to bound the wait for a stop's
	// confirmation; and a renewal that fails is retried until the margin,
	// at most a third of the lease, before the lease would run out
	// (docs/runner-api.md, "Renewals"). 5 seconds when zero.
	Margin time.Duration
	// Holder says who holds the session, for the runner's log.
	Holder string
	// Logger receives "Remote execution terminated" and the like.
	Logger *slog.Logger
	// ShutdownTimeout bounds the graceful stop: 5 seconds when zero.
	ShutdownTimeout time.Duration
	// SameMachine resolves a plugin's relative dir against the spec's
	// directory, as for local plugins: the embedded runner shares the
	// host's file system. Otherwise a relative dir is sent as it is, and
	// is relative to the runner's working directory.
	SameMachine bool
	// OnSession, when set, is told the id of each session the Remote
	// opens or resumes, once it holds it: the host records it, to resume
	// it after a restart (docs/upgrade.md). It must not call the Remote.
	OnSession func(id string)
}

// Remote is the placement of the plugins of one runner.
type Remote struct {
	log *slog.Logger

	mu     sync.Mutex
	cfg    Config  // Update changes it: the next session uses it
	c      *client // the client of cfg
	sess   *session
	closed bool
	wg     sync.WaitGroup // background stops of starts answered after their caller gave up
}

// New returns the placement of the runner cfg describes. It connects at
// the first start.
func New(cfg Config) (*Remote, error) {
	if cfg.Name == "" {
		cfg.Name = cfg.Address
	}
	if cfg.Margin <= 0 {
		cfg.Margin = spec.DefaultMargin
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = spec.ShutdownTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Remote{cfg: cfg, c: c, log: cfg.Logger}, nil
}

// Update takes a new token, TLS config, InsecurePlaintext, lease and
// margin for the runner (its name and address stay). The session under way keeps its own; the
// next one, and every start and stop made through it, uses the new ones:
// stops of what the old session started included, since a runner stops a
// process of a lost session through a new one.
func (r *Remote) Update(cfg Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cfg
	if cfg.Token == old.Token && cfg.TLS == old.TLS && cfg.InsecurePlaintext == old.InsecurePlaintext &&
		cfg.Lease == old.Lease && (cfg.Margin == old.Margin || cfg.Margin <= 0) {
		return nil
	}
	next := old
	next.Token, next.TLS, next.InsecurePlaintext, next.Lease = cfg.Token, cfg.TLS, cfg.InsecurePlaintext, cfg.Lease
	if cfg.Margin > 0 {
		next.Margin = cfg.Margin
	}
	c, err := newClient(next)
	if err != nil {
		return err
	}
	if s := r.sess; s == nil || s.c != r.c {
		r.c.close()
	}
	r.c, r.cfg = c, next
	return nil
}

// Start starts the plugin on the runner and returns once it runs (and is
// ready). The runner gives it the instance name as its id and the next
// generation of the instance.
func (r *Remote) Start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inst := Instance(req)
	op := "start " + inst
	s, err := r.session(ctx)
	if err != nil {
		return nil, err
	}
	body := runnerapi.Start{Session: s.id, Plugin: req.Name, Project: req.Project, Overlap: req.Overlap, Spec: req.Launch}
	body.Env, body.Dir = env(req.Launch.Env, req.Env), r.dir(req)
	// The call ends with its caller or the session. The runner stops a
	// start whose caller went away, and its process with it.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	defer stop()
	var started runnerapi.Started
	err = s.c.call(cctx, op, "POST", "/v1/instances/"+url.PathEscape(inst)+"/start", body, &started)
	if ctx.Err() != nil {
		if err == nil {
			// Answered as its caller gave up: stop it now.
			r.abandon(s.track(req, inst, started))
		}
		return nil, ctx.Err()
	}
	if err != nil {
		var api *APIError
		if errors.As(err, &api) && api.Generation > 0 {
			s.forget(key{inst, api.Generation})
		}
		return nil, r.startError(req.Name, err)
	}
	h := s.track(req, inst, started)
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		// Close may have listed the session's processes before this one:
		// it is stopped here.
		h.Stop(context.Background())
		return nil, errors.New("remote: placement closed")
	}
	return h, nil
}

// abandon stops h: in the background, which Close waits for; once Close
// began, at once.
func (r *Remote) abandon(h *handle) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		h.Stop(context.Background())
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		h.Stop(context.Background())
	}()
}

// startError turns a failed start into the error a placement reports: a
// start that ran and failed is a *runtime.StartError.
func (r *Remote) startError(plugin string, err error) error {
	var api *APIError
	if errors.As(err, &api) {
		if api.Kind == runnerapi.KindStartFailed && api.Exit != nil {
			return &runtime.StartError{Plugin: plugin, Reason: api.ErrorBody.Error, Exit: exitOf(*api.Exit)}
		}
		return fmt.Errorf("start %s on runner %s: %w", plugin, r.cfg.Name, api)
	}
	return err
}

// dir is the working directory to ask for.
func (r *Remote) dir(req runtime.Request) string {
	if r.cfg.SameMachine {
		return req.Path(req.Launch.Dir)
	}
	return req.Launch.Dir
}

func env(spec, extra map[string]string) map[string]string {
	if len(spec)+len(extra) == 0 {
		return nil
	}
	out := maps.Clone(spec)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, extra)
	return out
}

// session returns the live session, opening one if there is none.
func (r *Remote) session(ctx context.Context) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sess; s != nil && s.ctx.Err() == nil {
		return s, nil // while closing too: Close stops through it
	}
	if r.closed {
		return nil, errors.New("remote: placement closed")
	}
	s, err := openSession(ctx, r, r.cfg, r.c)
	if err != nil {
		return nil, err
	}
	r.sess = s
	return s, nil
}

// Close stops every plugin the placement runs, ends its session and drops
// its connections.
func (r *Remote) Close() error {
	r.mu.Lock()
	r.closed = true
	s := r.sess
	r.mu.Unlock()
	r.wg.Wait()
	var errs *multierror.Error
	if s != nil {
		errs = s.close()
	}
	r.mu.Lock()
	r.c.close()
	r.mu.Unlock()
	return errs.ErrorOrNil()
}

// dropClient drops the idle connections of a session's client that an
// Update replaced.
func (r *Remote) dropClient(c *client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c != r.c {
		c.close()
	}
}

// HoldSockets has the runner bind, or keep, the sockets req's start will
// list, now, in the session that start will use (runtime.SocketHolder,
// runnerapi.HoldSockets). The runner's refusal is a *runtime.SocketError.
func (r *Remote) HoldSockets(ctx context.Context, req runtime.Request) error {
	inst := Instance(req)
	s, err := r.session(ctx)
	if err != nil {
		return err
	}
	body := runnerapi.HoldSockets{Session: s.id, Dir: r.dir(req), Listen: req.Launch.Listen, ListenKey: req.Launch.ListenKey}
	err = s.c.call(ctx, "hold the sockets of "+inst, "POST", "/v1/instances/"+url.PathEscape(inst)+"/sockets", body, nil)
	var api *APIError
	if errors.As(err, &api) && api.Kind == runnerapi.KindStartFailed {
		return &runtime.SocketError{Err: err}
	}
	return err
}

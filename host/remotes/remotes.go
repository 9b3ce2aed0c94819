// Package remotes keeps a host's remote placements: one runtime/remote
// per runner the spec names (by name and address), its settings (token,
// TLS, lease) read from the spec's files once an apply, and the runner
// embedded in the host for runner entries without an address, started at
// its first use.
package remotes

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/remote"
	"github.com/graftland/graft/spec"
)

// Options configures a Registry.
type Options struct {
	// StateDir is the host's state dir: the embedded runner keeps its state
	// in StateDir/runner and listens on StateDir/runner.sock (elsewhere
	// when that path is too long: hostapi.Listen).
	StateDir string
	// HostID names the host to the runners, in their sessions' holder.
	HostID string
	// Version is the embedded runner's.
	Version string
	// Limits bound the embedded runner's connections; zero: the defaults.
	Limits guard.Limits
	// Logger receives the sessions' and the embedded runner's log.
	Logger *slog.Logger
}

// The embedded runner's files in the host's state dir.
const (
	Dir    = statedir.EmbeddedRunner // its state
	Socket = statedir.EmbeddedSocket // where it listens
)

// Registry is the host's runner placements. It is safe for concurrent use.
type Registry struct {
	opt Options

	mu       sync.Mutex
	byKey    map[string]*entry
	embedded *embedded
	apply    uint64 // counts Refresh, to tell the runners an apply named
	// desired is the spec of the apply under way, and named the placement
	// (or the error) of each runner it names, with the settings Refresh
	// read: every start of the apply takes its runner's from here.
	desired *spec.Spec
	named   map[string]resolved
	// sessions is the record of the sessions held with separate runners.
	sessions *sessions
}

// resolved is a runner's placement for an apply, or why there is none.
type resolved struct {
	p   *remote.Remote
	err error
}

// entry is a runner's placement and the settings it was given last: an
// apply that changes them (a new token, a renewed certificate, another
// lease) updates it in place, so that the plugins on the runner, and
// their retries, use them from their next session on.
type entry struct {
	r        *remote.Remote
	settings string
	apply    uint64 // the last apply that named it
	// separate: a runner of its own, with an address, not the one
	// embedded in the host.
	separate bool
	name     string // the runner's name and address, as recorded
	address  string
}

// New returns an empty Registry, with the record of the sessions an
// earlier host held (sessions.go).
func New(opt Options) *Registry {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := loadSessions(opt.StateDir)
	if err != nil {
		opt.Logger.Warn("read the record of the sessions with runners: none is resumed", "file", s.path, "err", err)
	}
	return &Registry{opt: opt, byKey: map[string]*entry{}, sessions: s}
}

// Placement is the placement of runner plugin p of desired: the remote of
// its runner, as the apply of desired (Refresh) found it, its settings
// read once for the whole apply; for a spec no apply refreshed, found now.
func (g *Registry) Placement(desired *spec.Spec, p *spec.Plugin) (runtime.Placement, error) {
	g.mu.Lock()
	r, ok := g.named[p.Runner]
	ok = ok && g.desired == desired
	g.mu.Unlock()
	if !ok {
		r.p, r.err = g.resolve(desired, p.Runner)
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.p, nil
}

// resolve is the placement of runner name of desired: its remote, made at
// its first use and given the settings desired says now, its files read
// now.
func (g *Registry) resolve(desired *spec.Spec, name string) (*remote.Remote, error) {
	cfg, settings, err := g.config(desired, name)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	separate, address := cfg.Address != "", cfg.Address
	cfg.OnSession = func(id string) {
		if err := g.sessions.set(cfg.Name, address, id); err != nil {
			g.opt.Logger.Error("record the session with a runner", "runner", cfg.Name, "err", err)
		}
	}
	if cfg.Address == "" {
		e, err := g.embeddedRunner()
		if err != nil {
			return nil, fmt.Errorf("start the runner embedded in the host: %w", err)
		}
		cfg.Address, cfg.SameMachine = "unix://"+e.sock.Path, true
	}
	key := cfg.Name + "\x00" + cfg.Address
	if e := g.byKey[key]; e != nil {
		e.apply = g.apply
		if e.settings != settings {
			if err := e.r.Update(cfg); err != nil {
				return nil, fmt.Errorf("runner %s: %w", cfg.Name, err)
			}
			e.settings = settings
		}
		return e.r, nil
	}
	r, err := remote.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", cfg.Name, err)
	}
	g.byKey[key] = &entry{r: r, settings: settings, apply: g.apply, separate: separate, name: cfg.Name, address: address}
	return r, nil
}

// config is the remote's config for runner name of desired ("" is the
// embedded one), its files read now, and a digest of its settings that
// tells them from others: the token, the lease, the TLS files' contents,
// insecurePlaintext.
func (g *Registry) config(desired *spec.Spec, name string) (remote.Config, string, error) {
	var rs spec.Runner
	if r := desired.Runners[name]; r != nil {
		rs = *r
	}
	cfg := remote.Config{
		Name:    runnerName(name),
		Address: rs.Address,
		// Only a runner's entry may let its token cross plain TCP beyond
		// loopback (docs/security.md, "Runner tokens").
		InsecurePlaintext: rs.InsecurePlaintext,
		Lease:             rs.Connect.Lease.Std(),
		Margin:            rs.Connect.Margin.Std(),
		Holder:            fmt.Sprintf("graft host %s (pid %d)", g.opt.HostID, os.Getpid()),
		Logger:            g.opt.Logger,
	}
	if rs.TokenFile != "" {
		tok, err := hostapi.ReadToken(desired.Path(rs.TokenFile))
		if err != nil {
			return cfg, "", fmt.Errorf("runner %s: token: %w", name, err)
		}
		cfg.Token = tok
	}
	var tlsSum string
	if rs.TLS != nil {
		t, sum, err := tlsConfig(desired, rs.TLS)
		if err != nil {
			return cfg, "", fmt.Errorf("runner %s: tls: %w", name, err)
		}
		cfg.TLS, tlsSum = t, sum
	}
	return cfg, fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%t", cfg.Token, cfg.Lease, cfg.Margin, tlsSum, cfg.InsecurePlaintext), nil
}

// runnerName is the name of runner name of a spec in the logs and the
// record of sessions: "embedded" for "", the runner embedded in the host.
func runnerName(name string) string {
	if name == "" {
		return "embedded"
	}
	return name
}

// Refresh begins an apply of desired: it gives the placements of
// desired's runners their settings as they are now (a token file
// rewritten, a certificate renewed), plugins with no step in the plan
// included: their retries and stops use them from their next session on.
// A setting that cannot be read is logged here, and fails the steps that
// need it.
func (g *Registry) Refresh(desired *spec.Spec) {
	g.mu.Lock()
	g.apply++
	g.mu.Unlock()
	named := map[string]resolved{}
	for _, p := range desired.Plugins {
		if _, seen := named[p.Runner]; !p.Run.Traits().Runner || seen {
			continue
		}
		pl, err := g.resolve(desired, p.Runner)
		if err != nil {
			g.opt.Logger.Warn("runner settings", "runner", p.Runner, "err", err)
		}
		named[p.Runner] = resolved{pl, err}
	}
	g.mu.Lock()
	g.desired, g.named = desired, named
	g.mu.Unlock()
}

// Prune ends the sessions with runners that the last apply did not name
// (their address changed, say) and that used does not hold: the
// placements of the plugins the host still tracks, among them one whose
// stop is unconfirmed, which keeps its runner's to ask again.
func (g *Registry) Prune(used map[runtime.Placement]bool) {
	g.mu.Lock()
	var unused []*entry
	for key, e := range g.byKey {
		if e.apply != g.apply && !used[e.r] {
			unused = append(unused, e)
			delete(g.byKey, key)
		}
	}
	g.mu.Unlock()
	for _, e := range unused {
		if err := e.r.Close(); err != nil {
			g.opt.Logger.Warn("end the session with a runner no longer named", "err", err)
		}
		g.forget(e)
	}
}

// forget removes the record of e's session, which the host ended.
func (g *Registry) forget(e *entry) {
	if err := g.sessions.set(e.name, e.address, ""); err != nil {
		g.opt.Logger.Error("record the sessions with runners", "err", err)
	}
}

// Close ends the sessions with runners (what still runs on them is
// stopped), and removes their records, then the embedded runner.
func (g *Registry) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs *multierror.Error
	for _, e := range g.byKey {
		if err := e.r.Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
		g.forget(e)
	}
	g.byKey = map[string]*entry{}
	if e := g.embedded; e != nil {
		if err := e.close(); err != nil {
			errs = multierror.Append(errs, err)
		}
		g.embedded = nil
	}
	return errs.ErrorOrNil()
}

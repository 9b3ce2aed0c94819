package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/elect/etcd"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/termtext"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/floating"
	"github.com/graftland/graft/spec"
)

// LeaderCmd is `graft leader PLUGIN [--json]`.
type LeaderCmd struct {
	Plugin string `arg:"" predictor:"plugin" help:"The floating plugin."`
	JSON   bool   `name:"json" help:"Print the lease as JSON."`
}

// Run asks the host who leads; without one, it reads the lease file named
// by the plugins file.
func (c *LeaderCmd) Run(ctx context.Context, g *Globals) error {
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	var info *hostapi.LeaderInfo
	if up {
		defer cl.Close()
		if info, err = cl.Leader(ctx, c.Plugin); err != nil {
			return err
		}
	} else if info, err = c.fromFile(g); err != nil {
		return fmt.Errorf("%s %w", g.noHost(dir), err)
	}
	if c.JSON {
		return writeJSON(g.stdout, info)
	}
	// The lease file is on a share others write, and a host may answer
	// over TCP: what a terminal would act on is escaped.
	line := func(label, format string, args ...any) {
		fmt.Fprintf(g.stdout, "%-11s%s\n", label+":", termtext.Line(fmt.Sprintf(format, args...)))
	}
	if info.Backend == "etcd" {
		line("Plugin", "%s (instance %s, on etcd %s, keys under %s)", info.Plugin, info.Instance, strings.Join(info.Endpoints, ","), info.Key)
	} else {
		line("Plugin", "%s (instance %s, lease in %s)", info.Plugin, info.Instance, info.Dir)
	}
	line("Holder", "%s", info.Holder)
	line("Address", "%s", info.Address)
	line("Epoch", "%d", info.Epoch)
	if info.Backend == "etcd" {
		line("Lease", "an etcd session with ttl %s; the epoch is the leader's key's create revision", time.Duration(info.TTLMillis)*time.Millisecond)
	} else {
		line("Lease", "%s", leaseLine(info, up))
	}
	if up {
		line("This host", "%s, %s", info.HostID, info.Role)
	}
	return nil
}

// leaseLine says how fresh the lease is.
func leaseLine(info *hostapi.LeaderInfo, watched bool) string {
	age := (time.Duration(info.AgeMillis) * time.Millisecond).Round(100 * time.Millisecond)
	ttl := time.Duration(info.TTLMillis) * time.Millisecond
	state := "live"
	switch {
	case info.Released:
		state = "released by its holder"
	case age > ttl:
		state = "expired"
	}
	if !watched {
		// Without a host watching the file, its age is the share's clock
		// read against this machine's: a guess, where clocks disagree.
		if !info.Released {
			state = "probably " + state
		}
		return fmt.Sprintf("%s, file written %s ago by the share's clock against this machine's (no host here watches it), ttl %s, renewal %d",
			state, age, ttl, info.RenewCount)
	}
	return fmt.Sprintf("%s, unchanged for %s (ttl %s), renewal %d", state, age, ttl, info.RenewCount)
}

// fromFile reads the lease of a floating plugin of the plugins file.
func (c *LeaderCmd) fromFile(g *Globals) (*hostapi.LeaderInfo, error) {
	s, err := spec.Load(g.File)
	if err != nil {
		return nil, err
	}
	p := s.Plugins[c.Plugin]
	switch {
	case p == nil:
		return nil, fmt.Errorf("%s has no plugin %q", g.File, c.Plugin)
	case !p.Run.Traits().Elect:
		return nil, fmt.Errorf("plugin %q is not floating (run: %s): it has no leader", c.Plugin, p.Run)
	}
	if p.Elect.Etcd != nil {
		return fromEtcd(s, p)
	}
	dir := s.Path(p.Elect.Dir)
	l, mtime, err := elect.Read(dir, p.Instance)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no host has led %s yet: %w", c.Plugin, err)
	}
	if err != nil {
		return nil, err
	}
	return &hostapi.LeaderInfo{
		Plugin: c.Plugin, Instance: p.Instance, Dir: dir,
		Holder: l.Holder, Address: l.Address, Epoch: l.Epoch, RenewCount: l.RenewCount, Released: l.Released,
		AgeMillis: time.Since(mtime).Milliseconds(), TTLMillis: p.Elect.TTL.Std().Milliseconds(),
	}, nil
}

// fromEtcd asks etcd who leads floating plugin p of s.
func fromEtcd(s *spec.Spec, p *spec.Plugin) (*hostapi.LeaderInfo, error) {
	cfg, err := floating.EtcdConfig(runtime.Request{Project: s.Name, Dir: s.Dir}.For(p), "-")
	if err != nil {
		return nil, err
	}
	cfg.HostID, cfg.StopBudget = "graft-leader", 0 // it only reads
	e, err := etcd.Open(cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, _, err := e.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return &hostapi.LeaderInfo{
		Plugin: p.Name, Instance: p.Instance, Backend: "etcd", Endpoints: cfg.Endpoints, Key: cfg.Candidates(),
		Holder: l.Holder, Address: l.Address, Epoch: l.Epoch, TTLMillis: cfg.SessionTTL.Milliseconds(),
	}, nil
}

package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/termtext"
	"github.com/graftland/graft/internal/tlsconf"
	"github.com/graftland/graft/plan"
)

// stateDir is --state-dir, else .graft beside the plugins file.
func (g *Globals) stateDir(file string) string {
	if g.StateDir != "" {
		return g.StateDir
	}
	return filepath.Join(filepath.Dir(file), ".graft")
}

// fileArg is the plugins file a command names, else --file.
func (g *Globals) fileArg(arg string) string {
	if arg != "" {
		return arg
	}
	return g.File
}

// client returns a client of the host of dir, or of --host, and whether
// one answers.
func (g *Globals) client(ctx context.Context, dir string) (*hostapi.Client, bool, error) {
	c, err := g.newClient(dir)
	if err != nil {
		return nil, false, err
	}
	switch err := c.Ping(ctx, 5*time.Second); {
	case err == nil:
		g.noteOlderHost(c)
		return c, true, nil
	case errors.Is(err, hostapi.ErrNoHost):
		return c, false, nil
	default:
		return nil, false, err
	}
}

// noteOlderHost says, once a command, on stderr, that the host c talks to
// runs an older graft than this one, when it does: it serves this graft
// (its protocol is this one's, or it would have refused), but it may lack
// what this graft's documentation promises. Versions that are not
// releases ("devel") are compared with nothing (skew.Older).
func (g *Globals) noteOlderHost(c *hostapi.Client) {
	h, ok := c.Host()
	if g.noted || !ok || !skew.Older(h.Version, skew.Version()) {
		return
	}
	g.noted = true
	fmt.Fprintf(g.stderr, "graft: note: the host runs graft %s, older than this graft %s; run graft upgrade to bring it up to date\n",
		termtext.Line(h.Version), termtext.Line(skew.Version()))
}

func (g *Globals) newClient(dir string) (*hostapi.Client, error) {
	if g.Host == "" {
		return hostapi.NewClient(dir)
	}
	if g.TokenFile == "" {
		return nil, fmt.Errorf("--host %s: a host over TCP requires its token: --token-file FILE", g.Host)
	}
	token, err := hostapi.ReadToken(g.TokenFile)
	if err != nil {
		return nil, err
	}
	var conf *tls.Config
	if g.TLS || g.TLSCA != "" || g.TLSCert != "" || g.TLSKey != "" {
		if conf, err = tlsconf.Client(g.TLSCA, g.TLSCert, g.TLSKey); err != nil {
			return nil, fmt.Errorf("--host %s: %w", g.Host, err)
		}
	}
	return hostapi.NewTCPClient(hostapi.TCP{Addr: g.Host, Token: token, TLS: conf, InsecurePlaintext: g.Plaintext})
}

// hostStartTimeout bounds the wait for a host started in the background.
const hostStartTimeout = 15 * time.Second

// ensureHost returns a client of the host of dir, starting one in the
// background when none answers.
func ensureHost(ctx context.Context, g *Globals, dir string) (*hostapi.Client, error) {
	c, up, err := g.client(ctx, dir)
	if err != nil || up {
		return c, err
	}
	if g.Host != "" {
		return nil, fmt.Errorf("no host answers at %s", g.Host)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(g.stderr, "Starting a host for %s (its log: %s)\n", dir, filepath.Join(dir, hostapi.HostLog))
	if err := host.StartBackground(exe, dir, hostStartTimeout); err != nil {
		return nil, err
	}
	return c, nil
}

// holder describes this command, for whoever finds the apply lock held.
func holder(command string) string {
	who := "someone"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	hostname, _ := os.Hostname()
	return fmt.Sprintf("graft %s by %s@%s (pid %d)", command, who, hostname, os.Getpid())
}

// noHost is said when a command finds no host.
func (g *Globals) noHost(dir string) string {
	if g.Host != "" {
		return fmt.Sprintf("No host answers at %s.", g.Host)
	}
	return fmt.Sprintf("No host is running for %s.", dir)
}

// hostPlan reads a plan as a host sends it (its JSON form,
// docs/plan-format.md).
func hostPlan(raw json.RawMessage) (*plan.Plan, error) {
	var p plan.Plan
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("read the host's plan: %w", err)
	}
	if p.Format != plan.Format {
		return nil, fmt.Errorf("the host's plan has format %q, want %q: is the host another version of graft? (graft version shows both)", p.Format, plan.Format)
	}
	return &p, nil
}

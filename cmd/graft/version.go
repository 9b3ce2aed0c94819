package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/termtext"
	"github.com/graftland/graft/runnerapi"
)

// VersionCmd is `graft version [--json]`.
type VersionCmd struct {
	JSON bool `name:"json" help:"Print the versions as JSON: {\"version\": ..., \"host\": {...}}."`
}

// versions is what graft version prints: this graft's, and the host's
// that answers in the state dir (or at --host), if one does.
type versions struct {
	Version   string `json:"version"`
	Go        string `json:"go"`
	Platform  string `json:"platform"`
	Protocols struct {
		Host   int `json:"host"`
		Runner int `json:"runner"`
	} `json:"protocols"`
	// Host is nil when no host answers.
	Host *hostVersion `json:"host"`
}

// hostVersion is a running host's version.
type hostVersion struct {
	Version string `json:"version"`
	// Protocol is 0 for a host from before protocols.
	Protocol int    `json:"protocol,omitempty"`
	PID      int    `json:"pid"`
	StateDir string `json:"stateDir"`
}

// Run prints graft's version, the Go version it was built with and the
// platform; then the version and protocol of the host of the state dir,
// found as graft status finds it, or that none is running. It starts no
// host, and says nothing of an older one but its version.
func (c *VersionCmd) Run(ctx context.Context, g *Globals) error {
	v := versions{Version: skew.Version(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	v.Protocols.Host, v.Protocols.Runner = hostapi.Protocol, runnerapi.Protocol
	dir := g.stateDir(g.File)
	h, err := hostOf(ctx, g, dir)
	if err != nil {
		return err
	}
	v.Host = h
	if c.JSON {
		return writeJSON(g.stdout, v)
	}
	fmt.Fprintf(g.stdout, "graft %s (%s, %s)\n", termtext.Line(v.Version), v.Go, v.Platform)
	switch {
	case h == nil && g.Host != "":
		fmt.Fprintf(g.stdout, "host  none answers at %s\n", termtext.Line(g.Host))
	case h == nil:
		fmt.Fprintf(g.stdout, "host  none running in %s\n", termtext.Line(dir))
	default:
		protocol := "protocol unknown"
		if h.Protocol != 0 {
			protocol = fmt.Sprintf("protocol %d", h.Protocol)
		}
		fmt.Fprintf(g.stdout, "host  %s (%s, pid %d, %s)\n", termtext.Line(h.Version), protocol, h.PID, termtext.Line(h.StateDir))
	}
	return nil
}

// hostOf is the version of the host that answers in dir, or at --host;
// nil when none does.
func hostOf(ctx context.Context, g *Globals, dir string) (*hostVersion, error) {
	cl, err := g.newClient(dir)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := cl.Status(ctx)
	switch {
	case errors.Is(err, hostapi.ErrNoHost):
		return nil, nil
	case err != nil:
		return nil, err
	}
	h := &hostVersion{}
	if st.Host != nil {
		h.Version, h.PID, h.StateDir = st.Host.Version, st.Host.PID, st.Host.StateDir
	}
	if p, ok := cl.Host(); ok {
		h.Version, h.Protocol = p.Version, p.Protocol
	}
	return h, nil
}

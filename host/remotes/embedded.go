package remotes

import (
	"context"
	"path/filepath"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/runner"
	"github.com/graftland/graft/runtime"
)

// embedded is a runner inside the host, serving on a unix socket in its
// state dir (or elsewhere, where that path is too long: hostapi.Listen),
// for runner entries without an address.
type embedded struct {
	r      *runner.Runner
	sock   *hostapi.Socket
	cancel context.CancelFunc // ends its Serve
	done   chan error         // Serve's error, once it returned
}

// embeddedRunner starts the embedded runner if it does not run yet. g.mu
// is held.
func (g *Registry) embeddedRunner() (*embedded, error) {
	if e := g.embedded; e != nil {
		return e, nil
	}
	log := g.opt.Logger
	r, err := runner.Open(filepath.Join(g.opt.StateDir, Dir), runner.Options{Logger: log.With("runner", "embedded"), Version: g.opt.Version, Limits: g.opt.Limits})
	if err != nil {
		return nil, err
	}
	// Where the host's socket is elsewhere, so is this one, and the host
	// has warned of a socket directory in XDG_RUNTIME_DIR that will not
	// do (sock.Unused): once is enough. The host dials it at the path it
	// is given here; no one else needs to find it.
	sock, err := hostapi.Listen(g.opt.StateDir, Socket)
	if err != nil {
		r.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &embedded{r: r, sock: sock, cancel: cancel, done: make(chan error, 1)}
	go func() {
		e.done <- r.Serve(ctx, guard.Listener(sock, g.opt.Limits), "unix://"+sock.Path, nil)
	}()
	g.embedded = e
	return e, nil
}

// close stops the runner (what runs on it is stopped), then its server,
// then removes its socket and the directory made for it.
func (e *embedded) close() error {
	e.cancel()
	err := <-e.done
	e.sock.Remove()
	return err
}

// Handover readies the runner embedded in the host, if one runs, for the
// host's next program (runner.Handover): its processes, and the host's
// session with it, outlive the host's exec. undo undoes it when the exec
// fails. With no embedded runner there is nothing to do.
func (g *Registry) Handover(window time.Duration) (undo func(), err error) {
	g.mu.Lock()
	e := g.embedded
	g.mu.Unlock()
	if e == nil {
		return func() {}, nil
	}
	return e.r.Handover(window)
}

// Has reports whether pl is one of the Registry's runner placements.
func (g *Registry) Has(pl runtime.Placement) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.byKey {
		if runtime.Placement(e.r) == pl {
			return true
		}
	}
	return false
}

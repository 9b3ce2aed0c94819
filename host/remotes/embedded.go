package remotes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/runner"
)

// embedded is a runner inside the host, serving on a unix socket in its
// state dir, for runner entries without an address.
type embedded struct {
	path   string
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
	path, err := hostapi.SocketIn(g.opt.StateDir, Socket)
	if err != nil {
		r.Close()
		return nil, err
	}
	os.Remove(path) // left by a host that died; this one holds the state dir's lock
	ln, err := privsock.Listen(path)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &embedded{path: path, cancel: cancel, done: make(chan error, 1)}
	go func() {
		e.done <- r.Serve(ctx, guard.Listener(ln, g.opt.Limits), "unix://"+path, nil)
	}()
	g.embedded = e
	return e, nil
}

// close stops the runner (what runs on it is stopped), then its server,
// which removes its socket.
func (e *embedded) close() error {
	e.cancel()
	return <-e.done
}

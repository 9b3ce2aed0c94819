package runners

import (
	"errors"
	"fmt"
	"net/http"
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
	r    *runner.Runner
	srv  *http.Server
	path string
	done chan struct{}
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
	limits := g.opt.Limits.WithDefaults()
	e := &embedded{r: r, srv: guard.Server(r.Handler(), limits, log), path: path, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		if err := e.srv.Serve(guard.Listener(ln, limits.MaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("embedded runner", "err", err)
		}
	}()
	g.embedded = e
	log.Info("embedded runner listening", "socket", path)
	return e, nil
}

// close stops the runner (what runs on it is stopped), then its server.
func (e *embedded) close() error {
	err := e.r.Close()
	e.srv.Close()
	<-e.done
	os.Remove(e.path)
	return err
}

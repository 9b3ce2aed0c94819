package host

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/remote"
	"github.com/graftland/graft/runtime/runner"
	"github.com/graftland/graft/spec"
)

// remotes are the host's placements of runner plugins: one per runner
// setting (address, token, lease, margin), and the runner embedded in the
// host, started at its first use.
type remotes struct {
	mu       sync.Mutex
	byKey    map[string]*remote.Remote
	embedded *embedded
}

// embedded is a runner inside the host, serving on a unix socket in its
// state dir, for runner entries without an address.
type embedded struct {
	r    *runner.Runner
	srv  *http.Server
	path string
	done chan struct{}
}

// remotePlacement is the placement of plugin p of desired: the remote of
// its runner.
func (h *Host) remotePlacement(desired *spec.Spec, p *spec.Plugin) (runtime.Placement, error) {
	var rs spec.Runner
	if r := desired.Runners[p.Runner]; r != nil {
		rs = *r
	}
	name := p.Runner
	if name == "" {
		name = "embedded"
	}
	cfg := remote.Config{
		Name:    name,
		Address: rs.Address,
		Lease:   rs.Connect.Lease.Std(),
		Margin:  rs.Connect.Margin.Std(),
		Holder:  fmt.Sprintf("graft host %s (pid %d)", h.hostID, os.Getpid()),
		Logger:  h.log,
	}
	if rs.TokenFile != "" {
		path := rs.TokenFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(desired.Dir, path)
		}
		tok, err := ReadToken(path)
		if err != nil {
			return nil, fmt.Errorf("runner %s: token: %w", name, err)
		}
		cfg.Token = tok
	}
	if rs.TLS != nil {
		t, err := runnerTLS(desired.Dir, rs.TLS)
		if err != nil {
			return nil, fmt.Errorf("runner %s: tls: %w", name, err)
		}
		cfg.TLS = t
	}
	h.remotes.mu.Lock()
	defer h.remotes.mu.Unlock()
	if cfg.Address == "" {
		e, err := h.embeddedRunner()
		if err != nil {
			return nil, fmt.Errorf("start the runner embedded in the host: %w", err)
		}
		cfg.Address, cfg.SameMachine = "unix://"+e.path, true
	}
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%+v", name, cfg.Address, cfg.Token, cfg.Lease, cfg.Margin, rs.TLS)
	if r := h.remotes.byKey[key]; r != nil {
		return r, nil
	}
	r, err := remote.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", name, err)
	}
	if h.remotes.byKey == nil {
		h.remotes.byKey = map[string]*remote.Remote{}
	}
	h.remotes.byKey[key] = r
	return r, nil
}

// runnerTLS is the TLS config of a runner's connections; its files are
// relative to dir.
func runnerTLS(dir string, t *spec.RunnerTLS) (*tls.Config, error) {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pem, err := os.ReadFile(abs(t.CA))
		if err != nil {
			return nil, err
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", t.CA)
		}
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(abs(t.Cert), abs(t.Key))
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// embeddedRunner starts the embedded runner if it does not run yet.
// h.remotes.mu is held.
func (h *Host) embeddedRunner() (*embedded, error) {
	if e := h.remotes.embedded; e != nil {
		return e, nil
	}
	r, err := runner.Open(filepath.Join(h.dir, runnerDir), runner.Options{Logger: h.log.With("runner", "embedded"), Version: h.opt.Version})
	if err != nil {
		return nil, err
	}
	path, err := socketIn(h.dir, runnerSocket)
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
	e := &embedded{r: r, srv: &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 10 * time.Second}, path: path, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("embedded runner", "err", err)
		}
	}()
	h.remotes.embedded = e
	h.log.Info("embedded runner listening", "socket", path)
	return e, nil
}

// closeRemotes ends the sessions with runners (what still runs on them is
// stopped), then the embedded runner.
func (h *Host) closeRemotes() error {
	h.remotes.mu.Lock()
	defer h.remotes.mu.Unlock()
	var errs *multierror.Error
	for _, r := range h.remotes.byKey {
		if err := r.Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	h.remotes.byKey = nil
	if e := h.remotes.embedded; e != nil {
		if err := e.r.Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
		e.srv.Close()
		<-e.done
		os.Remove(e.path)
		h.remotes.embedded = nil
	}
	return errs.ErrorOrNil()
}

package host

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/placement"
	"github.com/graftland/graft/placement/remote"
	"github.com/graftland/graft/runner"
	"github.com/graftland/graft/spec"
)

// remotes are the host's placements of runner plugins: one per runner
// name and address, and the runner embedded in the host, started at its
// first use.
type remotes struct {
	mu       sync.Mutex
	byKey    map[string]*hostRemote
	embedded *embedded
	apply    uint64 // counts refreshRemotes, to tell the runners an apply named
}

// hostRemote is a runner's placement and the settings it was given last:
// an apply that changes them (a new token, a renewed certificate, another
// lease) updates it in place, so that the plugins on the runner, and
// their retries, use them from their next session on.
type hostRemote struct {
	r        *remote.Remote
	settings string
	apply    uint64 // the last apply that named it
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
func (h *Host) remotePlacement(desired *spec.Spec, p *spec.Plugin) (placement.Placement, error) {
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
		tok, err := hostapi.ReadToken(desired.Path(rs.TokenFile))
		if err != nil {
			return nil, fmt.Errorf("runner %s: token: %w", name, err)
		}
		cfg.Token = tok
	}
	var tlsSum string
	if rs.TLS != nil {
		t, sum, err := runnerTLS(desired.Dir, rs.TLS)
		if err != nil {
			return nil, fmt.Errorf("runner %s: tls: %w", name, err)
		}
		cfg.TLS, tlsSum = t, sum
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
	key := name + "\x00" + cfg.Address
	settings := fmt.Sprintf("%s\x00%s\x00%s\x00%s", cfg.Token, cfg.Lease, cfg.Margin, tlsSum)
	if hr := h.remotes.byKey[key]; hr != nil {
		hr.apply = h.remotes.apply
		if hr.settings != settings {
			if err := hr.r.Update(cfg); err != nil {
				return nil, fmt.Errorf("runner %s: %w", name, err)
			}
			hr.settings = settings
		}
		return hr.r, nil
	}
	r, err := remote.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", name, err)
	}
	if h.remotes.byKey == nil {
		h.remotes.byKey = map[string]*hostRemote{}
	}
	h.remotes.byKey[key] = &hostRemote{r: r, settings: settings, apply: h.remotes.apply}
	return r, nil
}

// refreshRemotes gives the placements of desired's runners their
// settings as they are now (a token file rewritten, a certificate
// renewed), plugins with no step in the plan included: their retries and
// stops use them from their next session on. A setting that cannot be read
// is logged here, and fails the steps that need it.
func (h *Host) refreshRemotes(desired *spec.Spec) {
	h.remotes.mu.Lock()
	h.remotes.apply++
	h.remotes.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range desired.Plugins {
		if p.Run != spec.Remote || seen[p.Runner] {
			continue
		}
		seen[p.Runner] = true
		if _, err := h.remotePlacement(desired, p); err != nil {
			h.log.Warn("runner settings", "runner", p.Runner, "err", err)
		}
	}
}

// pruneRemotes ends the sessions with runners that the last apply did not
// name (their address changed, say) and that no plugin the host tracks
// runs on: one whose stop is unconfirmed keeps its runner's, to ask again.
func (h *Host) pruneRemotes() {
	used := map[placement.Placement]bool{}
	h.mu.Lock()
	for _, e := range h.plugins {
		used[e.placement] = true
	}
	h.mu.Unlock()
	h.remotes.mu.Lock()
	var unused []*remote.Remote
	for key, hr := range h.remotes.byKey {
		if hr.apply != h.remotes.apply && !used[hr.r] {
			unused = append(unused, hr.r)
			delete(h.remotes.byKey, key)
		}
	}
	h.remotes.mu.Unlock()
	for _, r := range unused {
		if err := r.Close(); err != nil {
			h.log.Warn("end the session with a runner no longer named", "err", err)
		}
	}
}

// runnerTLS is the TLS config of a runner's connections; its files are
// relative to dir.
func runnerTLS(dir string, t *spec.RunnerTLS) (*tls.Config, string, error) {
	// sum tells one setting from another: the files' contents, not only
	// their names, so that a renewed certificate is taken at the next
	// apply.
	sum := sha256.New()
	fmt.Fprintf(sum, "%q\n", t.ServerName)
	read := func(p string) ([]byte, error) {
		b, err := os.ReadFile(spec.Resolve(dir, p))
		fmt.Fprintf(sum, "%d\n", len(b))
		sum.Write(b)
		return b, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pem, err := read(t.CA)
		if err != nil {
			return nil, "", err
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("%s: no PEM certificate in it", t.CA)
		}
	}
	if t.Cert != "" {
		certPEM, err := read(t.Cert)
		if err != nil {
			return nil, "", err
		}
		keyPEM, err := read(t.Key)
		if err != nil {
			return nil, "", err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, "", fmt.Errorf("%s and %s: %w", t.Cert, t.Key, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, hex.EncodeToString(sum.Sum(nil)), nil
}

// embeddedRunner starts the embedded runner if it does not run yet.
// h.remotes.mu is held.
func (h *Host) embeddedRunner() (*embedded, error) {
	if e := h.remotes.embedded; e != nil {
		return e, nil
	}
	r, err := runner.Open(filepath.Join(h.dir, runnerDir), runner.Options{Logger: h.log.With("runner", "embedded"), Version: h.opt.Version, Limits: h.opt.Limits})
	if err != nil {
		return nil, err
	}
	path, err := hostapi.SocketIn(h.dir, runnerSocket)
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
	limits := h.opt.Limits.WithDefaults()
	e := &embedded{r: r, srv: guard.Server(r.Handler(), limits, h.log), path: path, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		if err := e.srv.Serve(guard.Listener(ln, limits.MaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
	for _, hr := range h.remotes.byKey {
		if err := hr.r.Close(); err != nil {
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

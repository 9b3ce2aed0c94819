package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/graftland/graft/internal/guard"
)

// Serve answers the runner's API on ln, behind the guard of its listener,
// until ctx ends or serving fails; then it stops every process (Close:
// interrupt, then kill after grace) and the server, and returns. addr is
// ln's address as it was given (tcp://HOST:PORT or unix://PATH), for the
// log; a unix socket is removed at the end. tlsConf, when set, serves TLS.
func (r *Runner) Serve(ctx context.Context, ln net.Listener, addr string, tlsConf *tls.Config) error {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		defer os.Remove(path)
	}
	srv := guard.Server(r.Handler(), r.opt.Limits, r.log)
	srv.TLSConfig = tlsConf
	served := make(chan error, 1)
	go func() {
		if tlsConf != nil {
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	r.log.Info("runner listening", "listen", addr, "tls", tlsConf != nil,
		"client-certificates", tlsConf != nil && tlsConf.ClientAuth != tls.NoClientCert, "token", r.opt.Token != "")
	var err error
	select {
	case <-ctx.Done():
		r.log.Info("stopping every process")
	case err = <-served:
		r.log.Error("serve", "err", err)
	}
	// Close first: it ends the event streams, which Shutdown would wait for.
	if cerr := r.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

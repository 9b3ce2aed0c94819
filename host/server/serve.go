// Package server is the host's HTTP API (docs/state-dir.md, README "The
// host"): its listeners (the state dir's socket, the optional TCP and
// metrics ones), the guard in front of each, and the handlers, which
// read the API's requests (hostapi), call the host's domain methods, and
// write their answers in the API's types.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/statedir"
)

// Options configures the host's listeners beyond its socket.
type Options struct {
	// TCP, when its Addr is set, is a second listener for remote clients.
	TCP TCP
	// Limits bound the connections of each listener; zero: the defaults.
	Limits guard.Limits
	// MetricsListen, tcp://HOST:PORT, when set, is a listener that serves
	// GET /metrics alone, without a token, for Prometheus.
	MetricsListen string
}

// server answers the API of one host.
type server struct {
	h   *host.Host
	opt Options
	log *slog.Logger
}

// Serve answers h's API on its socket (mode 0600), and on the listeners
// opt asks for, until ctx ends or graft down has stopped every plugin.
// ready, when set, is called once the socket accepts connections. It is
// what host.Host.Run serves with.
func Serve(ctx context.Context, h *host.Host, opt Options, ready func()) error {
	s := &server{h: h, opt: opt, log: h.Log()}
	ln, path, cleanup, err := s.listenSocket()
	if err != nil {
		return err
	}
	defer cleanup()
	limits := opt.Limits.WithDefaults()
	servers := []*http.Server{guard.Server(s.api(""), limits, s.log)}
	listeners := []net.Listener{guard.Listener(ln, limits)}
	if opt.TCP.Addr != "" {
		tln, err := opt.TCP.listen()
		if err != nil {
			ln.Close()
			return err
		}
		tln = guard.Listener(tln, limits)
		if conf := opt.TCP.TLS; conf != nil {
			tln = tls.NewListener(tln, conf)
		}
		servers = append(servers, guard.Server(s.api(opt.TCP.Token), limits, s.log))
		listeners = append(listeners, tln)
		s.log.Info("host listening", "tcp", tln.Addr().String(), "tls", opt.TCP.TLS != nil,
			"client-certificates", opt.TCP.TLS != nil && opt.TCP.TLS.ClientAuth != tls.NoClientCert)
	}
	if opt.MetricsListen != "" {
		mln, err := listenMetrics(opt.MetricsListen)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return err
		}
		servers = append(servers, guard.Server(s.metricsAPI(), limits, s.log))
		listeners = append(listeners, guard.Listener(mln, limits))
		s.log.Info("host listening", "metrics", mln.Addr().String())
	}
	s.log.Info("host listening", "socket", path, "pid", os.Getpid())
	return s.serve(ctx, servers, listeners, ready)
}

// listenSocket listens on the host's unix socket: in the state dir, or,
// where that path is too long for a socket, in a directory of the user's
// alone, which the state dir's socket link names (hostapi.Listen). It
// writes the link once it listens, before the host says it is ready, so
// a client that finds the link finds a host there. cleanup removes the
// socket, the directory made for it, and the link.
func (s *server) listenSocket() (ln net.Listener, path string, cleanup func(), err error) {
	dir := s.h.Dir()
	link := filepath.Join(dir, hostapi.SocketLink)
	os.Remove(link) // a host that died left it: this host holds the lock
	sock, err := hostapi.Listen(dir, statedir.Socket)
	if err != nil {
		return nil, "", nil, err
	}
	if err := sock.Unused(); err != nil {
		args := []any{"socket", sock.Path, "err", err}
		var h interface{ Hint() string }
		if errors.As(err, &h) {
			args = append(args, "fix", h.Hint())
		}
		s.log.Warn("the socket directory in XDG_RUNTIME_DIR will not do: the host listens in a directory made for it instead", args...)
	}
	cleanup = func() { os.Remove(link); sock.Remove() }
	if sock.Elsewhere() {
		if err := atomicfile.Write(link, []byte(sock.Path+"\n"), 0o600); err != nil {
			sock.Close()
			cleanup()
			return nil, "", nil, err
		}
	}
	return sock, sock.Path, cleanup, nil
}

// serve serves each server on its listener until ctx ends, graft down
// asks the host to end, or a server fails; then it shuts them down,
// giving requests under way (an apply, a log follower) a moment to end.
func (s *server) serve(ctx context.Context, servers []*http.Server, listeners []net.Listener, ready func()) error {
	served := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { served <- srv.Serve(listeners[i]) }()
	}
	if ready != nil {
		ready()
	}
	var err error
	select {
	case <-ctx.Done():
	case <-s.h.Ending():
	case err = <-served:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range servers {
		if srv.Shutdown(shutdown) != nil {
			srv.Close()
		}
	}
	left := len(servers)
	if err != nil {
		left--
	}
	for range left {
		<-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// api is the control API behind the guard of one listener: token is the
// TCP listener's; the owner's socket (mode 0600) has none.
func (s *server) api(token string) http.Handler {
	return guard.Handler(http.HandlerFunc(s.route), guard.Config{
		Daemon:    "host",
		Token:     token,
		TokenHint: "pass the host's token with --token-file",
		MaxBody:   hostapi.MaxBody,
		Limits:    s.opt.Limits,
		Streams:   "status watches, log follows, applies, restarts and downs",
		Log:       s.log,
		Self:      s.self(),
		Upgrade:   "run graft upgrade",
	})
}

// self is the host's graft version and the protocol of its API, which
// every answer carries (docs/architecture.md, "Version skew").
func (s *server) self() skew.Peer {
	return skew.Peer{Version: s.h.Version(), Protocol: hostapi.Protocol}
}

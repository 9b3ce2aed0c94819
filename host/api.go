package host

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/errkind"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/privsock"
)

// maxBody bounds a request body: a spec, or a saved plan with its spec.
const maxBody = hostapi.MaxBody

// Serve answers the control API on the host's socket (mode 0600) until ctx
// ends or graft down has stopped every plugin. ready, when set, is called
// once the socket accepts connections.
func (h *Host) Serve(ctx context.Context, ready func()) error {
	ln, path, cleanup, err := h.listenSocket()
	if err != nil {
		return err
	}
	defer cleanup()
	limits := h.opt.Limits.WithDefaults()
	servers := []*http.Server{guard.Server(h.api(""), limits, h.log)}
	listeners := []net.Listener{guard.Listener(ln, limits.MaxConns)}
	if h.opt.TCP.Addr != "" {
		tln, err := h.opt.TCP.listen()
		if err != nil {
			ln.Close()
			return err
		}
		tln = guard.Listener(tln, limits.MaxConns)
		if conf := h.opt.TCP.TLS; conf != nil {
			tln = tls.NewListener(tln, conf)
		}
		servers = append(servers, guard.Server(h.api(h.opt.TCP.Token), limits, h.log))
		listeners = append(listeners, tln)
		h.log.Info("host listening", "tcp", tln.Addr().String(), "tls", h.opt.TCP.TLS != nil,
			"client-certificates", h.opt.TCP.TLS != nil && h.opt.TCP.TLS.ClientAuth != tls.NoClientCert)
	}
	if h.opt.MetricsListen != "" {
		mln, err := listenMetrics(h.opt.MetricsListen)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return err
		}
		servers = append(servers, guard.Server(h.metricsAPI(), limits, h.log))
		listeners = append(listeners, guard.Listener(mln, limits.MaxConns))
		h.log.Info("host listening", "metrics", mln.Addr().String())
	}
	h.log.Info("host listening", "socket", path, "pid", os.Getpid())
	return h.serve(ctx, servers, listeners, ready)
}

// listenSocket listens on the host's unix socket: in the state dir, or,
// where that path is too long for a socket, in a private directory that
// the state dir's socket link names (hostapi.SocketPath). cleanup removes
// the socket and the link.
func (h *Host) listenSocket() (ln net.Listener, path string, cleanup func(), err error) {
	path, err = hostapi.SocketPath(h.dir)
	if err != nil {
		return nil, "", nil, err
	}
	link := filepath.Join(h.dir, hostapi.SocketLink)
	os.Remove(link)
	if filepath.Dir(path) != h.dir {
		if err := atomicfile.Write(link, []byte(path+"\n"), 0o600); err != nil {
			return nil, "", nil, err
		}
	}
	// A socket left by a host that died: this host holds the lock, so no
	// other host is listening there.
	os.Remove(path)
	if ln, err = privsock.Listen(path); err != nil {
		os.Remove(link)
		return nil, "", nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, path, func() { os.Remove(path); os.Remove(link) }, nil
}

// serve serves each server on its listener until ctx ends, graft down
// asks the host to end, or a server fails; then it shuts them down,
// giving requests under way (an apply, a log follower) a moment to end.
func (h *Host) serve(ctx context.Context, servers []*http.Server, listeners []net.Listener, ready func()) error {
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
	case <-h.down:
	case err = <-served:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range servers {
		if srv.Shutdown(shutdown) != nil {
			srv.Close()
		}
	}
	for range len(servers) - boolInt(err != nil) {
		<-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// api is the control API behind the guard of one listener: token is the
// TCP listener's; the owner's socket (mode 0600) has none.
func (h *Host) api(token string) http.Handler {
	return guard.Handler(http.HandlerFunc(h.route), guard.Config{
		Daemon:    "host",
		Token:     token,
		TokenHint: "pass the host's token with --token-file",
		MaxBody:   maxBody,
		Limits:    h.opt.Limits,
		Log:       h.log,
	})
}

// streaming is the handler of an apply-like request: it reads a
// hostapi.ApplyRequest, checks it, runs it, and answers with its messages,
// one JSON object a line, flushed as they come. A refusal before the apply
// begins is an error answer instead.
func (h *Host) streaming(check func(*hostapi.ApplyRequest) error, run func(ctx context.Context, req hostapi.ApplyRequest, events func(hostapi.Message)) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req hostapi.ApplyRequest
		if !readJSON(w, r, &req) {
			return
		}
		if err := checkCommon(&req); err != nil {
			writeError(w, http.StatusBadRequest, hostapi.ErrorBody{Error: "bad request: " + err.Error()})
			return
		}
		if err := check(&req); err != nil {
			writeError(w, http.StatusBadRequest, hostapi.ErrorBody{Error: "bad request: " + err.Error()})
			return
		}
		h.stream(w, func(events func(hostapi.Message)) error { return run(r.Context(), req, events) })
	}
}

func (h *Host) stream(w http.ResponseWriter, run func(events func(hostapi.Message)) error) {
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	began := false
	send := func(m hostapi.Message) {
		if !began {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			began = true
		}
		enc.Encode(m) // a client gone is noticed through the request's context
		if flusher != nil {
			flusher.Flush()
		}
	}
	err := run(send)
	if !began {
		writeError(w, statusFor(err), hostapi.Encode(err))
		return
	}
	done := hostapi.Message{Type: hostapi.MsgDone}
	for _, e := range unwrapAll(err) {
		done.Errors = append(done.Errors, e.Error())
		done.Failures = append(done.Failures, hostapi.Encode(e))
	}
	send(done)
}

// NotFoundError is a request about something the host does not have.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What }

// statusFor is the HTTP status of an answer that is err: 404 for what the
// host does not have, else its kind's (internal/errkind), else 500.
func statusFor(err error) int {
	var notFound *NotFoundError
	if errors.As(err, &notFound) {
		return http.StatusNotFound
	}
	if k, _ := errkind.Of(err); k != nil {
		return k.Status
	}
	return http.StatusInternalServerError
}

// unwrapAll lists the errors an error aggregates (go-multierror's, or
// errors.Join's), or the error itself.
func unwrapAll(err error) []error {
	switch m := err.(type) {
	case nil:
		return nil
	case interface{ WrappedErrors() []error }:
		return m.WrappedErrors()
	case interface{ Unwrap() []error }:
		return m.Unwrap()
	}
	return []error{err}
}

func (h *Host) serveLogs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("plugin")
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 {
		n = 20
	}
	follow := r.URL.Query().Get("follow") == "1"
	s, err := h.Follow(name, n, follow)
	if errors.Is(err, ErrNoLog) {
		writeError(w, http.StatusNotFound, hostapi.ErrorBody{Error: fmt.Sprintf("%s: %v", name, err)})
		return
	}
	if err != nil {
		writeError(w, statusFor(err), hostapi.Encode(err))
		return
	}
	defer s.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	flusher, _ := w.(http.Flusher)
	if err := s.WriteBacklog(w); err != nil {
		return // the client is gone, or a file could not be read: the answer ends short
	}
	live := s.Live()
	if live == nil {
		return
	}
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case l, ok := <-live:
			if !ok {
				return
			}
			fmt.Fprintln(w, l)
			if flusher != nil {
				flusher.Flush()
			}
		case <-r.Context().Done():
			return
		case <-h.down:
			// The host is ending: what was written before goes out first.
			for {
				select {
				case l, ok := <-live:
					if !ok {
						return
					}
					fmt.Fprintln(w, l)
				default:
					return
				}
			}
		}
	}
}

// readJSON reads exactly one JSON value into v, refusing unknown fields
// and anything after the value; a body that fails gets 400.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("more after the JSON value")
		}
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty body")
		}
		writeError(w, http.StatusBadRequest, hostapi.ErrorBody{Error: "bad request: " + err.Error()})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, b hostapi.ErrorBody) {
	writeJSON(w, status, b)
}

package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/graftland/graft/internal/errkind"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/httpapi"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/runnerapi"
)

// Handler serves the runner's API, /v1 (docs/runner-api.md), behind the
// guard (internal/guard): every route behind the token when the runner
// has one, no request from a web browser, none of a later protocol than
// runnerapi.Protocol, JSON bodies of at most runnerapi.MaxBody, read
// within the body timeout, and a panic answered 500.
func (r *Runner) Handler() http.Handler {
	return guard.Handler(http.HandlerFunc(r.route), guard.Config{
		Daemon:    "runner",
		Token:     r.opt.Token,
		TokenHint: "give the runner's token in the runner's tokenFile in plugins.yaml",
		MaxBody:   runnerapi.MaxBody,
		Limits:    r.opt.Limits,
		Streams:   "sessions' event streams",
		Log:       r.log,
		Self:      skew.Peer{Version: r.opt.Version, Protocol: runnerapi.Protocol},
		Upgrade:   "start the runner with a later graft",
	})
}

// route dispatches on the path's segments, each unescaped, so an instance
// name in the path is one segment whatever it holds ("a%2Fb", "..") and
// reaches checkName instead of a router that would clean or split it.
func (r *Runner) route(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/metrics" && req.Method == http.MethodGet {
		r.metrics.handler().ServeHTTP(w, req)
		return
	}
	seg, err := httpapi.Segments(req)
	if err != nil || len(seg) < 2 || seg[0] != "v1" {
		writeRouteError(w, http.StatusNotFound, "no route %s %s", req.Method, req.URL.Path)
		return
	}
	method := func(m string, h func()) {
		if !httpapi.Method(w, req, m) {
			writeRouteError(w, http.StatusMethodNotAllowed, "%s %s: want %s", req.Method, req.URL.Path, m)
			return
		}
		h()
	}
	// A request that changes a process or a session waits while the
	// runner hands over to its next program (handover.go).
	change := func(m string, h func()) {
		method(m, func() {
			r.enter()
			defer r.leave()
			h()
		})
	}
	switch rest := seg[1:]; {
	case len(rest) == 1 && rest[0] == "status":
		method(http.MethodGet, func() { writeJSON(w, r.status()) })
	case len(rest) == 1 && rest[0] == "sessions":
		change(http.MethodPost, func() {
			var body runnerapi.OpenSession
			if !decodeRequest(w, req, &body, validateOpenSession) {
				return
			}
			v, err := r.openSession(&body)
			answer(w, v, err)
		})
	case len(rest) == 2 && rest[0] == "sessions":
		change(http.MethodDelete, func() {
			v, err := r.endSession(rest[1])
			answer(w, v, err)
		})
	case len(rest) == 3 && rest[0] == "sessions" && rest[2] == "renew":
		method(http.MethodPost, func() {
			v, err := r.renew(rest[1])
			answer(w, v, err)
		})
	case len(rest) == 3 && rest[0] == "sessions" && rest[2] == "events":
		method(http.MethodGet, func() { r.serveEvents(w, req, rest[1]) })
	case len(rest) >= 3 && rest[0] == "instances" && slices.Contains(instanceOps, rest[len(rest)-1]):
		// More than one segment between is a name with a '/' in it.
		name := strings.Join(rest[1:len(rest)-1], "/")
		op := rest[len(rest)-1]
		change(http.MethodPost, func() { r.instanceOp(w, req, name, op) })
	default:
		writeRouteError(w, http.StatusNotFound, "no route %s %s", req.Method, req.URL.Path)
	}
}

// instanceOps are the last segments of POST /v1/instances/NAME/...
var instanceOps = []string{"start", "stop", "reload", "health", "sockets"}

// instanceOp serves POST /v1/instances/NAME/start, .../stop, .../reload
// and .../health, op, once the name is checked.
func (r *Runner) instanceOp(w http.ResponseWriter, req *http.Request, name, op string) {
	if err := validateName(name); err != nil {
		writeError(w, kindErr(runnerapi.KindBadRequest, "%s: %v", op, err))
		return
	}
	switch op {
	case "start":
		var body runnerapi.Start
		if decodeRequest(w, req, &body, validateStart) {
			v, err := r.start(req.Context(), name, &body)
			answer(w, v, err)
		}
		return
	case "reload":
		var body runnerapi.Reload
		if decodeRequest(w, req, &body, validateReload) {
			v, err := r.reload(req.Context(), name, &body)
			answer(w, v, err)
		}
		return
	case "sockets":
		var body runnerapi.HoldSockets
		if decodeRequest(w, req, &body, validateHoldSockets) {
			v, err := r.holdSockets(name, &body)
			answer(w, v, err)
		}
		return
	case "health":
		var body runnerapi.SetHealth
		if decodeRequest(w, req, &body, validateSetHealth) {
			v, err := r.setHealth(req.Context(), name, &body)
			answer(w, v, err)
		}
		return
	}
	var body runnerapi.Stop
	if decodeRequest(w, req, &body, validateStop) {
		v, err := r.stop(name, &body)
		answer(w, v, err)
	}
}

// decodeRequest reads a request's JSON body into v, at most
// runnerapi.MaxBody bytes, refusing unknown fields, and checks it; a body
// that fails gets 400 and false.
func decodeRequest[T any](w http.ResponseWriter, req *http.Request, v *T, check func(*T) error) bool {
	err := decode(http.MaxBytesReader(w, req.Body, runnerapi.MaxBody), v, check)
	if err != nil {
		writeError(w, kindErr(runnerapi.KindBadRequest, "%s %s: %v", req.Method, req.URL.Path, err))
		return false
	}
	return true
}

// decode reads exactly one JSON value of type T from body
// (httpapi.Read), and checks it.
func decode[T any](body io.Reader, v *T, check func(*T) error) error {
	switch err := httpapi.Read(body, v); {
	case errors.Is(err, httpapi.ErrTooLarge):
		return errors.New("the body is over 1 MiB")
	case err != nil:
		return errors.New("bad body: " + err.Error())
	}
	return check(v)
}

// answer writes v, or err's error answer.
func answer[T any](w http.ResponseWriter, v *T, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, v)
}

func writeJSON(w http.ResponseWriter, v any) { httpapi.WriteJSON(w, http.StatusOK, v, false) }

// writeError answers err: a *kindError with the status of its kind,
// anything else as internal.
func writeError(w http.ResponseWriter, err error) {
	var e *kindError
	if !errors.As(err, &e) {
		e = kindErr(runnerapi.KindInternal, "%v", err)
	}
	writeBody(w, statusOf(e.body.Kind), e.body)
}

// statusOf is the HTTP status of an error answer of kind, as the kind
// declares it (runnerapi, internal/errkind): the one place the runner's
// domain errors meet HTTP.
func statusOf(kind string) int { return errkind.StatusOf(kind, http.StatusInternalServerError) }

// writeRouteError answers a request no route takes: HTTP's own matter
// (404, 405), not the runner's.
func writeRouteError(w http.ResponseWriter, status int, format string, args ...any) {
	writeBody(w, status, runnerapi.ErrorBody{Error: fmt.Sprintf(format, args...), Kind: runnerapi.KindBadRequest})
}

func writeBody(w http.ResponseWriter, status int, body runnerapi.ErrorBody) {
	httpapi.WriteJSON(w, status, body, false)
}

// serveEvents streams the session's events until the session ends, the
// stream is replaced, the client goes away or the runner closes. It holds
// one of its listener's stream slots (guard.Stream).
func (r *Runner) serveEvents(w http.ResponseWriter, req *http.Request, id string) {
	r.mu.Lock()
	s := r.sessions[id]
	r.mu.Unlock()
	if s == nil {
		writeError(w, noSession(id))
		return
	}
	release, ok := guard.Stream(w, req)
	if !ok {
		return
	}
	defer release()
	st := newStream()
	if !s.connect(st) {
		writeError(w, noSession(id))
		return
	}
	defer s.disconnect(st)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	enc := json.NewEncoder(w)
	ping := time.NewTicker(max(s.lease/3, time.Millisecond))
	defer ping.Stop()
	for {
		evs := st.take()
		for _, ev := range evs {
			if enc.Encode(ev) != nil {
				return
			}
		}
		if len(evs) > 0 {
			if rc.Flush() != nil {
				return
			}
			st.written()
		}
		select {
		case <-st.wake:
		case <-ping.C:
			if enc.Encode(runnerapi.Event{Type: runnerapi.EventPing}) != nil || rc.Flush() != nil {
				return
			}
		case <-st.done:
			// What was queued before the end still goes out.
			for _, ev := range st.take() {
				if enc.Encode(ev) != nil {
					return
				}
			}
			rc.Flush()
			return
		case <-req.Context().Done():
			return
		case <-r.ctx.Done():
			return
		}
	}
}

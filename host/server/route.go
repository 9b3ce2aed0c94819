package server

import (
	"fmt"
	"net/http"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/httpapi"
)

// route dispatches on the path's segments, each unescaped; a plugin's
// name in the path must be one (host.ValidateName), so it never names a file
// outside the state dir.
func (s *server) route(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		method(w, r, http.MethodGet, s.metricsHandler().ServeHTTP)
		return
	}
	seg, err := httpapi.Segments(r)
	if err != nil || len(seg) < 2 || seg[0] != "v1" {
		writeError(w, http.StatusNotFound, hostapi.ErrorBody{Error: fmt.Sprintf("no route %s %s", r.Method, r.URL.EscapedPath())})
		return
	}
	method := func(m string, serve http.HandlerFunc) { method(w, r, m, serve) }
	plugin := func(serve http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := host.ValidateName(seg[2]); err != nil {
				writeFailure(w, err)
				return
			}
			r.SetPathValue("plugin", seg[2])
			serve(w, r)
		}
	}
	switch rest := seg[1:]; {
	case len(rest) == 1 && rest[0] == "status" && r.URL.Query().Get("watch") == "1":
		method(http.MethodGet, s.serveWatch)
	case len(rest) == 1 && rest[0] == "status":
		method(http.MethodGet, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.h.Status()) })
	case len(rest) == 1 && rest[0] == "apply":
		method(http.MethodPost, s.streaming(validateApply, s.apply))
	case len(rest) == 1 && rest[0] == "restart":
		method(http.MethodPost, s.streaming(validateRestart, s.h.Restart))
	case len(rest) == 1 && rest[0] == "down":
		method(http.MethodPost, s.streaming(validateDown, s.h.Down))
	case len(rest) == 1 && rest[0] == "plan":
		method(http.MethodPost, s.servePlan)
	case len(rest) == 1 && rest[0] == "upgrade":
		method(http.MethodPost, s.serveUpgrade)
	case len(rest) == 2 && rest[0] == "logs":
		method(http.MethodGet, plugin(s.serveLogs))
	case len(rest) == 2 && rest[0] == "leader":
		method(http.MethodGet, plugin(s.serveLeader))
	default:
		writeError(w, http.StatusNotFound, hostapi.ErrorBody{Error: fmt.Sprintf("no route %s %s", r.Method, r.URL.EscapedPath())})
	}
}

// method serves r with serve when it has method m, else answers 405.
func method(w http.ResponseWriter, r *http.Request, m string, serve http.HandlerFunc) {
	if !httpapi.Method(w, r, m) {
		writeError(w, http.StatusMethodNotAllowed, hostapi.ErrorBody{Error: fmt.Sprintf("%s %s: want %s", r.Method, r.URL.EscapedPath(), m)})
		return
	}
	serve(w, r)
}

// serveLeader answers GET /v1/leader/{plugin}.
func (s *server) serveLeader(w http.ResponseWriter, r *http.Request) {
	info, err := s.h.Leader(r.Context(), r.PathValue("plugin"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

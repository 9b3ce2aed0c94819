package host

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/graftland/graft/hostapi"
)

// route dispatches on the path's segments, each unescaped; a plugin's
// name in the path must be one (spec's rule), so it never names a file
// outside the state dir.
func (h *Host) route(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		method(w, r, http.MethodGet, h.metrics.handler().ServeHTTP)
		return
	}
	seg, err := segments(r.URL.EscapedPath())
	if err != nil || len(seg) < 2 || seg[0] != "v1" {
		writeError(w, http.StatusNotFound, hostapi.ErrorBody{Error: fmt.Sprintf("no route %s %s", r.Method, r.URL.EscapedPath())})
		return
	}
	method := func(m string, serve http.HandlerFunc) { method(w, r, m, serve) }
	plugin := func(serve http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := checkName(seg[2]); err != nil {
				writeError(w, statusFor(err), hostapi.Encode(err))
				return
			}
			r.SetPathValue("plugin", seg[2])
			serve(w, r)
		}
	}
	switch rest := seg[1:]; {
	case len(rest) == 1 && rest[0] == "status" && r.URL.Query().Get("watch") == "1":
		method(http.MethodGet, h.serveWatch)
	case len(rest) == 1 && rest[0] == "status":
		method(http.MethodGet, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, h.Status()) })
	case len(rest) == 1 && rest[0] == "apply":
		method(http.MethodPost, h.streaming(checkApply, func(ctx context.Context, req hostapi.ApplyRequest, events func(hostapi.Message)) error {
			_, err := h.Apply(ctx, req, events)
			return err
		}))
	case len(rest) == 1 && rest[0] == "restart":
		method(http.MethodPost, h.streaming(checkRestart, h.Restart))
	case len(rest) == 1 && rest[0] == "down":
		method(http.MethodPost, h.streaming(checkDown, h.Down))
	case len(rest) == 1 && rest[0] == "plan":
		method(http.MethodPost, h.servePlan)
	case len(rest) == 2 && rest[0] == "logs":
		method(http.MethodGet, plugin(h.serveLogs))
	case len(rest) == 2 && rest[0] == "leader":
		method(http.MethodGet, plugin(h.serveLeader))
	default:
		writeError(w, http.StatusNotFound, hostapi.ErrorBody{Error: fmt.Sprintf("no route %s %s", r.Method, r.URL.EscapedPath())})
	}
}

// method serves r with serve when it has method m, else answers 405.
func method(w http.ResponseWriter, r *http.Request, m string, serve http.HandlerFunc) {
	if r.Method != m {
		w.Header().Set("Allow", m)
		writeError(w, http.StatusMethodNotAllowed, hostapi.ErrorBody{Error: fmt.Sprintf("%s %s: want %s", r.Method, r.URL.EscapedPath(), m)})
		return
	}
	serve(w, r)
}

// segments splits an escaped path into its unescaped segments.
func segments(escaped string) ([]string, error) {
	parts := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, err
		}
		parts[i] = u
	}
	return parts, nil
}

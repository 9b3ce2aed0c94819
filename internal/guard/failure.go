package guard

import (
	"encoding/json"
	"net/http"

	"github.com/graftland/graft/internal/errkind"
)

// The kinds of the guard's error answers. Their bodies have the shape of
// both daemons' error answers: {"error": "...", "kind": "...", "hint": "..."}.
const (
	KindUnauthorized = errkind.Unauthorized // 401: bad or missing token
	KindForbidden    = errkind.Forbidden    // 403: a request from a web browser
	KindMediaType    = errkind.MediaType    // 415: a body, or a POST, that is not application/json
	KindTooLarge     = errkind.TooLarge     // 413: a body over the limit
	KindTimeout      = errkind.Timeout      // 408: a body that did not come in time
	KindBadRequest   = errkind.BadRequest   // 400: a body that could not be read
	KindInternal     = errkind.Internal     // 500: the handler panicked
	KindTooMany      = errkind.TooMany      // 429: the listener serves as many streams as it may
	KindUnavailable  = errkind.Unavailable  // 503: no slot for an authenticated connection came in time
	KindNewer        = errkind.Newer        // 400: a request of a later protocol than the daemon's (skew.NewerError)
)

// failure is an error answer of the guard; its status is its kind's
// (internal/errkind). It closes its connection: a refused client gets no
// connection kept for it (docs/security.md#listeners).
type failure struct {
	kind string
	msg  string
	hint string
	auth bool // a refused token: say which scheme is wanted
}

// Body is the JSON body of the guard's error answers.
type Body struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
	Hint  string `json:"hint,omitempty"`
}

func (f *failure) write(w http.ResponseWriter) {
	if f.auth {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Connection", "close")
	w.WriteHeader(errkind.StatusOf(f.kind, http.StatusInternalServerError))
	json.NewEncoder(w).Encode(Body{Error: f.msg, Kind: f.kind, Hint: f.hint})
}

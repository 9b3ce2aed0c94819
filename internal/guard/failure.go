package guard

import (
	"encoding/json"
	"net/http"
)

// The kinds of the guard's error answers. Their bodies have the shape of
// both daemons' error answers: {"error": "...", "kind": "...", "hint": "..."}.
const (
	KindUnauthorized = "unauthorized"           // 401: bad or missing token
	KindForbidden    = "forbidden"              // 403: a request from a web browser
	KindMediaType    = "unsupported-media-type" // 415: a body, or a POST, that is not application/json
	KindTooLarge     = "too-large"              // 413: a body over the limit
	KindTimeout      = "timeout"                // 408: a body that did not come in time
	KindBadRequest   = "bad-request"            // 400: a body that could not be read
	KindInternal     = "internal"               // 500: the handler panicked
)

// failure is an error answer of the guard.
type failure struct {
	status int
	kind   string
	msg    string
	hint   string
	auth   bool // a refused token: say which scheme is wanted
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
	w.WriteHeader(f.status)
	json.NewEncoder(w).Encode(Body{Error: f.msg, Kind: f.kind, Hint: f.hint})
}

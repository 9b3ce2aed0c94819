// Package httpapi is the HTTP plumbing both daemons' APIs share: the
// segments of a request's path, the method a route takes, one JSON value
// read from a body, and JSON written as an answer. What the routes are,
// and what their errors say, is each daemon's own.
package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Segments splits r's path into its segments, each unescaped, so that a
// name in the path is one segment whatever it holds ("a%2Fb", "..") and
// reaches the daemon's check of names instead of a router that would
// clean or split it.
func Segments(r *http.Request) ([]string, error) { return Split(r.URL.EscapedPath()) }

// Split is Segments of an escaped path.
func Split(escaped string) ([]string, error) {
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

// Method reports whether r has method m; when not, it sets the Allow
// header for the answer, which the caller writes (405).
func Method(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method == m {
		return true
	}
	w.Header().Set("Allow", m)
	return false
}

// ErrTooLarge is a body over the limit Decode was given.
var ErrTooLarge = errors.New("the body is over the limit")

// Decode reads exactly one JSON value of r's body into v (Read), at most
// limit bytes; one over the limit is ErrTooLarge.
func Decode(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	return Read(http.MaxBytesReader(w, r.Body, limit), v)
}

// Read reads exactly one JSON value of body into v, as it comes: body is
// never held whole. It refuses unknown fields and anything after the
// value. Its errors say what is wrong with the body ("empty body", "more
// after the JSON value"); a body that a http.MaxBytesReader cut is
// ErrTooLarge, and another error of body's own is returned as it is.
func Read(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		var syntax *json.SyntaxError
		switch _, end := dec.Token(); {
		case end == io.EOF:
		case end == nil || errors.As(end, &syntax):
			err = errors.New("more after the JSON value")
		default:
			err = end // the body could not be read to its end
		}
	}
	switch {
	case err == nil:
		return nil
	case tooLarge(err):
		return ErrTooLarge
	case errors.Is(err, io.EOF):
		return errors.New("empty body")
	}
	return err
}

func tooLarge(err error) bool {
	var e *http.MaxBytesError
	return errors.As(err, &e)
}

// WriteJSON answers with v as JSON and status: indented, for an answer
// people read (a host's status), or not; never cached.
func WriteJSON(w http.ResponseWriter, status int, v any, indent bool) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	enc.Encode(v) // a client gone is its own affair
}

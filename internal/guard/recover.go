package guard

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// recorder notes whether the answer has begun, so that a panic is
// answered 500 when it can still be.
type recorder struct {
	http.ResponseWriter
	wrote bool
}

func (r *recorder) WriteHeader(code int) {
	r.wrote = true
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Flush lets a handler that streams (w.(http.Flusher)) flush through the
// recorder.
func (r *recorder) Flush() { _ = r.FlushError() }

// FlushError is what http.ResponseController calls to flush.
func (r *recorder) FlushError() error {
	r.wrote = true
	return http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// recover turns a panic of the handler into a 500 answer, logged with its
// stack, and the daemon goes on. An answer already under way is cut off
// instead: the client sees it broken, not ended.
func (g *guard) recover(rec *recorder, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	g.c.Log.Error("a request panicked; the "+g.c.Daemon+" goes on",
		"method", clip(r.Method, 16), "path", clip(r.URL.EscapedPath(), 64),
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if rec.wrote {
		panic(http.ErrAbortHandler)
	}
	(&failure{kind: KindInternal,
		msg:  "the " + g.c.Daemon + " failed to answer: an internal error",
		hint: "the " + g.c.Daemon + "'s log has its stack; please report it"}).write(rec)
}

// Package guard stands between a listener of graft's daemons (the host and
// the runner) and their handlers: it refuses requests from web browsers,
// requests without the listener's token, requests of a later protocol than
// the daemon's (naming both versions, which its answers carry) and bodies
// that are not JSON,
// reads each body within a size and a time limit, and turns a handler's
// panic into a 500 answer, so that no request takes the daemon down.
// Listener and Server bound connections: how many at once per listener,
// unauthenticated ones apart, and how long one may take to send its
// request or sit idle; Stream bounds the answers that last as long as
// their client likes. See docs/security.md#listeners, the README's sections on
// the host and the runners, and docs/runner-api.md.
package guard

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/graftland/graft/internal/skew"
)

// Config is the guard of one listener.
type Config struct {
	// Daemon names the daemon in answers: "host" or "runner".
	Daemon string
	// Token, when set, must come with every request as "Authorization:
	// Bearer TOKEN". Only a unix socket that its owner alone may use goes
	// without one.
	Token string
	// TokenHint tells a client refused for its token what to do.
	TokenHint string
	// MaxBody bounds a request's body.
	MaxBody int64
	// Limits bound time; zero fields take their defaults.
	Limits Limits
	// Streams names the daemon's answers that hold a slot of Stream, for
	// its refusal: "status watches, log follows, applies". Empty: none
	// named.
	Streams string
	// Log receives refusals, at a bounded rate, and panics.
	Log *slog.Logger
	// Self, when its Protocol is set, is the daemon's graft version and
	// the protocol of its API: sent in the headers of every answer to a
	// request that passed the token check, and the protocol past which a
	// request is refused (docs/runner-api.md, "Versions").
	Self skew.Peer
	// Upgrade tells a client refused for its later protocol how to bring
	// the daemon up to date: "run graft upgrade".
	Upgrade string
}

// Handler returns next behind the guard c describes.
func Handler(next http.Handler, c Config) http.Handler {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	c.Limits = c.Limits.withDefaults()
	g := &guard{next: next, c: c}
	if c.Token != "" {
		g.want = []byte("Bearer " + c.Token)
	}
	g.refusals.every = c.Limits.LogEvery
	g.streams = make(chan struct{}, c.Limits.MaxStreams)
	return g
}

type guard struct {
	next     http.Handler
	c        Config
	want     []byte // the Authorization header to expect; nil: none
	refusals limiter
	streams  chan struct{} // a slot for each stream under way (Stream)
}

// guardKey is the request context's key of the guard it passed.
type guardKey struct{}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w}
	defer g.recover(rec, r)
	hasBody := r.ContentLength != 0
	rc := http.NewResponseController(w)
	if hasBody {
		// Until the body is read; also bounds what the server reads of
		// a body that a refusal leaves unread. (An httptest recorder has
		// no deadlines.)
		_ = rc.SetReadDeadline(time.Now().Add(g.c.Limits.BodyTimeout))
	}
	// Every refusal closes its connection (failure.write).
	if f := g.check(rec, r); f != nil {
		f.write(rec)
		return
	}
	if c := connOf(r.Context()); c != nil && !c.authenticate(r.Context()) {
		g.refusals.note(g.c.Log, "refused a request: every slot for an authenticated connection is taken", r)
		(&failure{kind: KindUnavailable,
			msg:  fmt.Sprintf("the %s refused the request: it serves %d authenticated connections at once, and none came free within %s", g.c.Daemon, g.c.Limits.MaxConns, g.c.Limits.AuthTimeout),
			hint: "try again once other clients of the " + g.c.Daemon + " are done"}).write(rec)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), guardKey{}, g))
	if hasBody {
		r2, release, f := g.body(rec, r, rc)
		if f != nil {
			// The deadline stays: it bounds what the server reads of
			// the rest before it closes the connection.
			f.write(rec)
			return
		}
		defer release()
		r = r2
	}
	g.next.ServeHTTP(rec, r)
}

// check refuses a request from a web browser, one without the token, one
// of a later protocol than the daemon's (version) and one with a body
// that is not JSON.
func (g *guard) check(w http.ResponseWriter, r *http.Request) *failure {
	// Browsers send Origin on cross-site and scripted requests, and
	// Sec-Fetch-Site on all; scripts cannot remove either. No client of
	// graft sends them.
	if len(r.Header.Values("Origin")) > 0 || len(r.Header.Values("Sec-Fetch-Site")) > 0 {
		g.refusals.note(g.c.Log, "refused a request from a web browser", r)
		return &failure{kind: KindForbidden,
			msg:  "the " + g.c.Daemon + " refused the request: it comes from a web browser (it carries an Origin or Sec-Fetch-Site header)",
			hint: "graft's daemons answer graft's clients only"}
	}
	if g.want != nil && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), g.want) != 1 {
		g.refusals.note(g.c.Log, "refused a request with a bad or missing token", r)
		return &failure{kind: KindUnauthorized, auth: true,
			msg: "the " + g.c.Daemon + " refused the request: bad or missing token", hint: g.c.TokenHint}
	}
	if f := g.version(w, r); f != nil {
		return f
	}
	if r.Method == http.MethodPost || r.ContentLength != 0 {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			return &failure{kind: KindMediaType,
				msg: "the " + g.c.Daemon + " refused the request: want Content-Type: application/json, for every POST and every body"}
		}
	}
	return nil
}

// Stream claims one of its listener's slots for an answer that may last
// as long as its client likes (a status watch, a log follow, an apply
// that waits for the lock, a session's events), for a handler behind
// Handler to call before it begins: at most Limits.MaxStreams run at
// once, fewer than the listener's authenticated connections, so that
// streams never take every slot. When every slot is taken it answers
// 429, naming the limit, and returns false. release gives the slot back;
// a request that did not pass a guard always gets one.
func Stream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	g, _ := r.Context().Value(guardKey{}).(*guard)
	if g == nil {
		return func() {}, true
	}
	select {
	case g.streams <- struct{}{}:
		return func() { <-g.streams }, true
	default:
	}
	g.refusals.note(g.c.Log, "refused a stream: every stream slot is taken", r)
	msg := fmt.Sprintf("the %s refused the stream: it serves at most %d streams at once on this listener", g.c.Daemon, g.c.Limits.MaxStreams)
	if g.c.Streams != "" {
		msg += " (" + g.c.Streams + ")"
	}
	(&failure{kind: KindTooMany, msg: msg, hint: "try again once another stream has ended"}).write(w)
	return nil, false
}

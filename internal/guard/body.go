package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// LargeBody is the size over which a request is large. Large requests
// take turns, in the whole process: at most LargeAtOnce at once have
// their body read and decoded, and what it carries parsed, so that a few
// clients sending large specs at once cannot make a daemon hold many of
// them in memory together (docs/security.md, "Memory"). A body up to
// LargeBody is read whole before its handler runs; a larger one streams
// to its handler, which decodes it as it comes.
const LargeBody = 1 << 20

// LargeAtOnce is how many large requests hold a turn at once.
const LargeAtOnce = 1

// large holds a token for each large request that has its turn.
var large = make(chan struct{}, LargeAtOnce)

// turns counts the large requests that hold their turn: a gauge, for
// tests and for whoever wonders why a request waits.
var turns atomic.Int64

// LargeTurns reports how many large requests hold their turn now: at most
// LargeAtOnce.
func LargeTurns() int64 { return turns.Load() }

// turnKey is the request context's key of its turn's release.
type turnKey struct{}

// Done ends r's turn among large requests: its handler calls it once r's
// body is decoded and what it carries parsed, before work that may take
// long (waiting for a lock, running an apply, writing the answer). The
// guard ends it when the handler returns otherwise. For a request that
// is not large, Done does nothing.
func Done(r *http.Request) {
	if release, ok := r.Context().Value(turnKey{}).(func()); ok {
		release()
	}
}

// body gives r's body as its handler reads it, at most MaxBody bytes,
// before the deadline the guard set: a small one read whole; a large one
// once its turn comes, streamed. release ends the turn; r2 is r with the
// body and its turn's release in its context.
func (g *guard) body(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) (r2 *http.Request, release func(), f *failure) {
	max := g.c.MaxBody
	if r.ContentLength > max {
		return nil, nil, g.tooLarge()
	}
	var buf bytes.Buffer
	if r.ContentLength <= min(LargeBody, max) {
		eof, err := readUpTo(&buf, r.Body, min(LargeBody, max))
		switch {
		case err != nil:
			return nil, nil, g.readFailure(err)
		case eof:
			// Small: read whole. The answer may take as long as it
			// takes (an apply's, a log follower's), and the server's
			// own read, which notices a client that goes away, must
			// not time out.
			_ = rc.SetReadDeadline(time.Time{})
			r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
			r.ContentLength = int64(buf.Len())
			return r, func() {}, nil
		case int64(buf.Len()) > max:
			return nil, nil, g.tooLarge()
		}
	}
	release, f = g.turn(r)
	if f != nil {
		return nil, nil, f
	}
	// The body must come within the body timeout of its turn.
	_ = rc.SetReadDeadline(time.Now().Add(g.c.Limits.BodyTimeout))
	r = r.WithContext(context.WithValue(r.Context(), turnKey{}, release))
	r.Body = &stream{g: g, w: w, rc: rc, r: io.MultiReader(&buf, http.MaxBytesReader(w, r.Body, max-int64(buf.Len()))), body: r.Body}
	return r, release, nil
}

// turn waits for a large request's turn, up to the body timeout.
func (g *guard) turn(r *http.Request) (release func(), f *failure) {
	timer := time.NewTimer(g.c.Limits.BodyTimeout)
	defer timer.Stop()
	select {
	case large <- struct{}{}:
	case <-r.Context().Done():
		return nil, g.readFailure(r.Context().Err())
	case <-timer.C:
		return nil, &failure{kind: KindTimeout,
			msg: fmt.Sprintf("the %s refused the request: it waited %s for its turn to be read (a body over %s is read and parsed %s at a time, and others were)",
				g.c.Daemon, g.c.Limits.BodyTimeout, size(LargeBody), turnsWord())}
	}
	turns.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			// What the turn decoded and parsed and no longer needs (a
			// body's buffer, a parse's trees) is collected before the
			// next turn begins, so the next reuses its memory instead of
			// adding to it: a collection costs little beside reading a
			// body this large.
			runtime.GC()
			turns.Add(-1)
			<-large
		})
	}, nil
}

func turnsWord() string {
	if LargeAtOnce == 1 {
		return "one"
	}
	return fmt.Sprint(LargeAtOnce)
}

// stream is a large body as its handler reads it: at most MaxBody bytes,
// its errors the guard's (a *BodyError), and the read deadline lifted
// once it has all come.
type stream struct {
	g    *guard
	w    http.ResponseWriter
	rc   *http.ResponseController
	r    io.Reader
	body io.Closer
	err  error
}

func (s *stream) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	switch {
	case err == io.EOF:
		// All of it came: what follows may take as long as it takes.
		_ = s.rc.SetReadDeadline(time.Time{})
		s.err = io.EOF
	case err != nil:
		f := s.g.readFailure(err)
		s.w.Header().Set("Connection", "close")
		s.err = &BodyError{f: f}
		err = s.err
	}
	return n, err
}

func (s *stream) Close() error { return s.body.Close() }

// BodyError is a large body the guard cut while its handler read it: over
// the limit, too slow, or broken off. Its message is the guard's; its
// handler answers it with Write.
type BodyError struct{ f *failure }

func (e *BodyError) Error() string { return e.f.msg }

// Kind is the error's kind (KindTooLarge, KindTimeout, KindBadRequest).
func (e *BodyError) Kind() string { return e.f.kind }

// Write answers the error as the guard answers its own refusals.
func (e *BodyError) Write(w http.ResponseWriter) { e.f.write(w) }

// readUpTo reads src into dst until src ends (eof) or dst holds more than
// limit bytes.
func readUpTo(dst *bytes.Buffer, src io.Reader, limit int64) (eof bool, err error) {
	_, err = io.CopyN(dst, src, limit-int64(dst.Len())+1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

func (g *guard) tooLarge() *failure {
	return &failure{kind: KindTooLarge,
		msg: fmt.Sprintf("the %s refused the request: its body is over %s", g.c.Daemon, size(g.c.MaxBody))}
}

func (g *guard) readFailure(err error) *failure {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &failure{kind: KindTimeout,
			msg: fmt.Sprintf("the %s refused the request: its body did not come within %s", g.c.Daemon, g.c.Limits.BodyTimeout)}
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return g.tooLarge()
	}
	return &failure{kind: KindBadRequest,
		msg: fmt.Sprintf("the %s could not read the request's body: %v", g.c.Daemon, err)}
}

// size writes a byte count for people: 32 MiB, 1 MiB, 512 bytes.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

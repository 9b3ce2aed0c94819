package guard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// LargeBody is the size over which bodies are read one at a time, in the
// whole process: a few clients sending large specs at once cannot make
// a daemon hold many of them in memory together.
const LargeBody = 1 << 20

// large is held while a large body is read.
var large = make(chan struct{}, 1)

// readBody reads r's body whole, at most MaxBody bytes, before the
// deadline the guard set.
func (g *guard) readBody(r *http.Request) ([]byte, *failure) {
	max := g.c.MaxBody
	if r.ContentLength > max {
		return nil, g.tooLarge()
	}
	var buf bytes.Buffer
	eof, err := readUpTo(&buf, r.Body, min(LargeBody, max))
	if err == nil && !eof {
		if int64(buf.Len()) > max {
			return nil, g.tooLarge()
		}
		// Larger than LargeBody: one at a time.
		select {
		case large <- struct{}{}:
			defer func() { <-large }()
		case <-r.Context().Done():
			return nil, g.readFailure(r.Context().Err())
		case <-time.After(g.c.Limits.BodyTimeout):
			return nil, g.readFailure(errWaitedTurn)
		}
		eof, err = readUpTo(&buf, r.Body, max)
	}
	switch {
	case err != nil:
		return nil, g.readFailure(err)
	case !eof:
		return nil, g.tooLarge()
	}
	return buf.Bytes(), nil
}

// readUpTo reads src into dst until src ends (eof) or dst holds more than
// limit bytes.
func readUpTo(dst *bytes.Buffer, src io.Reader, limit int64) (eof bool, err error) {
	_, err = io.CopyN(dst, src, limit-int64(dst.Len())+1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

var errWaitedTurn = errors.New("waited too long for another large body to be read")

func (g *guard) tooLarge() *failure {
	return &failure{kind: KindTooLarge,
		msg: fmt.Sprintf("the %s refused the request: its body is over %s", g.c.Daemon, size(g.c.MaxBody))}
}

func (g *guard) readFailure(err error) *failure {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errWaitedTurn) {
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

package guard

import (
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// The defaults of Limits.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultAuthTimeout   = 5 * time.Second
	DefaultBodyTimeout   = time.Minute
	DefaultIdleTimeout   = 2 * time.Minute
	DefaultMaxConns      = 256
	DefaultLogEvery      = time.Second
)

// maxHeaderBytes bounds a request's headers.
const maxHeaderBytes = 64 << 10

// Limits bound a listener's connections (docs/security.md#listeners).
// Nothing bounds how long an answer takes: an apply's streams for
// minutes, graft logs -f follows until it is stopped; but only so many
// answers that last until their client goes run at once (MaxStreams).
type Limits struct {
	// HeaderTimeout bounds the wait for a request's headers (a TLS
	// handshake included): 10 seconds.
	HeaderTimeout time.Duration
	// AuthTimeout bounds an unauthenticated connection (see Listener):
	// its TLS handshake and its first request, headers included, must
	// be done within it, and a request that passed the token check
	// waits for a slot at most this long: 5 seconds.
	AuthTimeout time.Duration
	// BodyTimeout bounds the wait for its body: a minute.
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection idle this long: 2 minutes
	// (or sooner, past MaxIdle).
	IdleTimeout time.Duration
	// MaxConns is the requests that passed the token check that a
	// listener serves at once: 256, streams included. A connection kept
	// alive between requests holds none.
	MaxConns int
	// MaxIdle is the authenticated connections kept alive between
	// requests that a listener keeps; past it, the one idle the longest
	// is closed: four times MaxConns, 1,024, so that as many hosts as a
	// runner serves streams for keep theirs (each keeps a dozen).
	MaxIdle int
	// MaxUnauthenticated is the unauthenticated connections a listener
	// keeps at once; a newer one evicts one of them: MaxConns, 256, so
	// that a burst of token holders' fresh connections (hosts starting
	// their plugins on one runner at once) gets in whole.
	MaxUnauthenticated int
	// MaxStreams is the answers that last until their client goes
	// (status watches, log follows, a runner's event streams, one for
	// each host's session) that a listener serves at once, below MaxConns
	// so that other requests always have slots: half MaxConns, 128; at
	// most MaxConns-1.
	MaxStreams int
	// LogEvery is the least time between two logged refusals: a second.
	LogEvery time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.HeaderTimeout, DefaultHeaderTimeout)
	def(&l.AuthTimeout, DefaultAuthTimeout)
	def(&l.BodyTimeout, DefaultBodyTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.LogEvery, DefaultLogEvery)
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxIdle <= 0 {
		l.MaxIdle = 4 * l.MaxConns
	}
	if l.MaxUnauthenticated <= 0 {
		l.MaxUnauthenticated = l.MaxConns
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = l.MaxConns / 2
	}
	l.MaxStreams = max(1, min(l.MaxStreams, l.MaxConns-1))
	return l
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

// Server returns a server of h with l's timeouts: for the headers (and a
// TLS handshake), and between requests. Handler bounds reading a body.
// It tells Handler which connection of a Listener a request came on.
// No WriteTimeout: it would cut streaming answers short. The server's own
// complaints (a failed TLS handshake, a malformed request) go to logger at
// warn, at most one every l.LogEvery.
func Server(h http.Handler, l Limits, logger *slog.Logger) *http.Server {
	l = l.withDefaults()
	if logger == nil {
		logger = slog.Default()
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(nc net.Conn, s http.ConnState) {
			if c := unwrap(nc); c != nil {
				c.setIdle(s == http.StateIdle)
			}
		},
		ErrorLog: log.New(&errorLog{log: logger, limit: limiter{every: l.LogEvery}}, "", 0),
	}
}

// errorLog writes the server's complaints to a slog.Logger, at a bounded
// rate.
type errorLog struct {
	log   *slog.Logger
	limit limiter
}

func (e *errorLog) Write(b []byte) (int, error) {
	if ok, suppressed := e.limit.allow(); ok {
		e.log.Warn(clip(strings.TrimSpace(string(b)), 256), "suppressed", suppressed)
	}
	return len(b), nil
}

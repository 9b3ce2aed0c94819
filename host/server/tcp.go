package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"github.com/graftland/graft/internal/cleartext"
	"github.com/graftland/graft/internal/guard"
)

// TCP is the host's optional second listener, for CI machines that apply
// to a host on another machine. It requires a token, loopback included:
// every request must carry it as "Authorization: Bearer TOKEN". Beyond
// loopback it requires TLS too, unless InsecurePlaintext says otherwise,
// so that the token never crosses a network in the clear.
type TCP struct {
	// Addr is tcp://HOST:PORT.
	Addr string
	// Token is the bearer token; required.
	Token string
	// TLS, when set, serves TLS (and, with ClientCAs, requires client
	// certificates).
	TLS *tls.Config
	// InsecurePlaintext allows plain TCP on an address beyond loopback.
	InsecurePlaintext bool
}

// Validate checks the address and that there is a token (a
// *guard.TokenRequiredError when there is none), and TLS beyond loopback
// (a *PlaintextError), before anything listens.
func (t TCP) Validate() error {
	addr, ok := strings.CutPrefix(t.Addr, "tcp://")
	if !ok {
		return fmt.Errorf("listen %q: want tcp://HOST:PORT", t.Addr)
	}
	hostname, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %w", t.Addr, err)
	}
	if t.Token == "" {
		return &guard.TokenRequiredError{Daemon: "graft host", Listen: t.Addr}
	}
	if t.TLS == nil && !t.InsecurePlaintext && !cleartext.Loopback(hostname) {
		return &PlaintextError{Listen: t.Addr}
	}
	return nil
}

// PlaintextError is a TCP listener beyond loopback without TLS: its
// token would cross the network in the clear.
type PlaintextError struct {
	// Listen is the address asked for.
	Listen string
}

func (e *PlaintextError) Error() string {
	return fmt.Sprintf("graft host --listen %s: beyond loopback the host takes its token only over TLS: --tls-cert FILE --tls-key FILE", e.Listen)
}

// Hint tells the operator the way out, and its risk.
func (e *PlaintextError) Hint() string {
	return "serve TLS with a certificate and key (PEM), or, on a network you trust with the token, pass --insecure-plaintext"
}

// listen listens on t.Addr, once Validate passes.
func (t TCP) listen() (net.Listener, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return net.Listen("tcp", strings.TrimPrefix(t.Addr, "tcp://"))
}

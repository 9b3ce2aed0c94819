package hostapi

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/graftland/graft/internal/cleartext"
	"github.com/graftland/graft/internal/skew"
)

// TCP is how a client reaches a host over TCP (one started with graft
// host --listen). The client keeps the rule the host keeps: beyond
// loopback the token crosses only TLS, unless InsecurePlaintext says
// otherwise (docs/security.md, "Tokens").
type TCP struct {
	// Addr is tcp://HOST:PORT.
	Addr string
	// Token is the bearer token sent with every request.
	Token string
	// TLS, when set, talks TLS.
	TLS *tls.Config
	// InsecurePlaintext allows plain TCP to an address beyond loopback.
	InsecurePlaintext bool
}

// NewTCPClient returns a client of the host t names. Over plain TCP it
// sends the token only once the far end has shown it speaks plain HTTP
// (a first request without it), and only to a loopback address, which it
// checks on each connection, after the name is resolved: a
// *PlaintextError otherwise.
func NewTCPClient(t TCP) (*Client, error) {
	hostport, ok := strings.CutPrefix(t.Addr, "tcp://")
	if !ok {
		return nil, fmt.Errorf("host %q: want tcp://HOST:PORT", t.Addr)
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return nil, fmt.Errorf("host %q: %w", t.Addr, err)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	c := &Client{base: "http://" + hostport, token: t.Token}
	c.http = &http.Client{Transport: skew.Transport(tr, self(), c.heard)}
	if t.TLS != nil {
		c.base = "https://" + hostport
		tr.TLSClientConfig = t.TLS
		return c, nil
	}
	c.plain = &cleartext.Probe{}
	if !t.InsecurePlaintext {
		tr.DialContext = cleartext.LoopbackOnly(nil, func(remote string) error {
			return &PlaintextError{Host: t.Addr, Remote: remote}
		})
	}
	return c, nil
}

// PlaintextError is a client that would send its token over plain TCP
// to an address beyond loopback.
type PlaintextError struct {
	// Host is --host; Remote the address it reached.
	Host, Remote string
}

func (e *PlaintextError) Error() string {
	return fmt.Sprintf("--host %s (%s): beyond loopback the token crosses only TLS: pass --tls-ca FILE (or --tls)", e.Host, e.Remote)
}

// Hint tells the operator the way out, and its risk.
func (e *PlaintextError) Hint() string {
	return "start the host with --tls-cert and --tls-key and trust its CA here, or, on a network you trust with the token, pass --insecure-plaintext"
}

// TLSRequiredError is a client over plain TCP to a host that serves TLS.
// Its token was not sent.
type TLSRequiredError struct {
	// Host is where the client talked.
	Host string
}

func (e *TLSRequiredError) Error() string {
	return fmt.Sprintf("the host at %s serves TLS: pass its CA with --tls-ca FILE (or GRAFT_TLS_CA), or --tls", e.Host)
}

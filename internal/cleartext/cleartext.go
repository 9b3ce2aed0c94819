// Package cleartext keeps graft's rule for bearer tokens over TCP: beyond
// loopback a token crosses only TLS, unless the operator says the network
// may see it (docs/security.md). The host's and the runner's listeners
// check their address with Loopback before they listen; their clients
// over plain TCP dial through LoopbackOnly, which checks the far end of
// each connection once its name is resolved, and make a Probe before the
// token leaves, so that a server that serves TLS says so first.
package cleartext

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
)

// Loopback reports whether hostname, of a listen address, is of this
// machine's loopback alone: localhost or a loopback IP. An empty one, or
// 0.0.0.0, listens on every interface.
func Loopback(hostname string) bool {
	if hostname == "localhost" {
		return true
	}
	ip := net.ParseIP(hostname)
	return ip != nil && ip.IsLoopback()
}

// DialFunc dials as http.Transport.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// LoopbackOnly dials with dial (a net.Dialer's when nil), then closes a
// connection whose far end is not a loopback address, before a byte is
// sent, and returns the error refuse makes of that far end instead.
func LoopbackOnly(dial DialFunc, refuse func(remote string) error) DialFunc {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if a, ok := conn.RemoteAddr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
			conn.Close()
			return nil, refuse(conn.RemoteAddr().String())
		}
		return conn, nil
	}
}

// ErrServesTLS is a Probe answered by a server that serves TLS: the
// client must talk TLS to it. Its token was not sent.
var ErrServesTLS = errors.New("the server serves TLS")

// Probe is the first request of a client over plain TCP, made without
// the token: "OPTIONS *", which a Go server (net/http's, both daemons')
// answers itself, 200, before any handler sees it, so that no guard logs
// a refusal; one that serves TLS answers it with an HTTP 400 that says
// so, and the token has not left. The zero Probe has not been made.
type Probe struct {
	mu   sync.Mutex
	done bool
}

// Do makes the probe, once, with hc to base (http://HOST:PORT): until it
// gets an answer, each Do makes it again; after, Do returns nil at once.
// An answer of a server that serves TLS is ErrServesTLS; any other
// answer shows the server speaks plain HTTP. An error of hc is returned
// as it is, for the caller to name. A nil Probe (a client over TLS or a
// unix socket) has nothing to probe.
func (p *Probe) Do(ctx context.Context, hc *http.Client, base string) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, base, nil)
	if err != nil {
		return err
	}
	req.URL.Path, req.URL.Opaque = "", "*" // the request line is OPTIONS * HTTP/1.1
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeAnswer))
	if TLSAnswer(resp.StatusCode, b) {
		return ErrServesTLS
	}
	p.done = true
	return nil
}

// maxProbeAnswer bounds what is read of a probe's answer.
const maxProbeAnswer = 4 << 10

// TLSAnswer reports whether an answer of status with body is what a Go
// server that serves TLS (net/http's) writes to a plain HTTP request:
// 400, "Client sent an HTTP request to an HTTPS server."
func TLSAnswer(status int, body []byte) bool {
	return status == http.StatusBadRequest && bytes.Contains(body, []byte("HTTPS server"))
}

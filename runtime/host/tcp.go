package host

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// TCP is the host's optional second listener, for CI machines that apply
// to a host on another machine. Every request must carry the token as
// "Authorization: Bearer TOKEN"; without a token, the host listens on
// loopback only.
type TCP struct {
	// Addr is tcp://HOST:PORT.
	Addr string
	// Token is the bearer token; empty: loopback only.
	Token string
}

// ReadToken reads a token file: its content, trimmed; empty is an error.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s: empty token", path)
	}
	return tok, nil
}

// listenTCP listens on t.Addr, refusing an address other than loopback
// when there is no token.
func (t TCP) listen() (net.Listener, error) {
	addr, ok := strings.CutPrefix(t.Addr, "tcp://")
	if !ok {
		return nil, fmt.Errorf("listen %q: want tcp://HOST:PORT", t.Addr)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", t.Addr, err)
	}
	if t.Token == "" && !loopback(host) {
		return nil, fmt.Errorf("listen %s: a host listens beyond loopback only with a token (--token-file)", t.Addr)
	}
	return net.Listen("tcp", addr)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorize lets through requests that carry the token, comparing in
// constant time; others get 401, have no effect, and are logged.
func (h *Host) authorize(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			h.log.Warn("refused a request with a bad or missing token", "remote", r.RemoteAddr, "path", r.URL.Path)
			writeError(w, http.StatusUnauthorized, ErrorBody{Error: "the host refused the request: bad or missing token", Hint: "pass the host's token with --token-file"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ErrUnauthorized is returned when a host refuses the client's token.
var ErrUnauthorized = errors.New("the host refused the request: bad or missing token")

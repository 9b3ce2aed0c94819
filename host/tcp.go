package host

import (
	"fmt"
	"net"
	"strings"

	"github.com/graftland/graft/internal/guard"
)

// TCP is the host's optional second listener, for CI machines that apply
// to a host on another machine. It requires a token, loopback included:
// every request must carry it as "Authorization: Bearer TOKEN".
type TCP struct {
	// Addr is tcp://HOST:PORT.
	Addr string
	// Token is the bearer token; required.
	Token string
}

// Check checks the address and that there is a token (a
// *guard.TokenRequiredError when there is none), before anything listens.
func (t TCP) Check() error {
	addr, ok := strings.CutPrefix(t.Addr, "tcp://")
	if !ok {
		return fmt.Errorf("listen %q: want tcp://HOST:PORT", t.Addr)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("listen %q: %w", t.Addr, err)
	}
	if t.Token == "" {
		return &guard.TokenRequiredError{Daemon: "graft host", Listen: t.Addr}
	}
	return nil
}

// listen listens on t.Addr, once Check passes.
func (t TCP) listen() (net.Listener, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	return net.Listen("tcp", strings.TrimPrefix(t.Addr, "tcp://"))
}

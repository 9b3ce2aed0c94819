package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/privsock"
)

// ParseListen reads a runner's listen address, tcp://HOST:PORT or
// unix://PATH, into a network and an address for net.Listen. A TCP
// address requires a token, loopback included (a
// *guard.TokenRequiredError): a runner starts processes for whoever
// reaches it. Only a unix socket, which its owner alone may use, goes
// without one.
func ParseListen(addr, token string) (network, address string, err error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		if path == "" {
			return "", "", fmt.Errorf("listen %q: no socket path", addr)
		}
		return "unix", path, nil
	}
	hostport, ok := strings.CutPrefix(addr, "tcp://")
	if !ok {
		return "", "", fmt.Errorf("listen %q: want tcp://HOST:PORT or unix://PATH", addr)
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return "", "", fmt.Errorf("listen %q: %w", addr, err)
	}
	if token == "" {
		return "", "", &guard.TokenRequiredError{Daemon: "graft runner", Listen: addr}
	}
	return "tcp", hostport, nil
}

// Listen listens on addr (see ParseListen), with the pools of
// guard.Listener at their default limits (docs/security.md#listeners).
// A unix socket is made mode 0600, so only its owner may talk to the
// runner; a socket file left at its path by a runner that died is
// replaced, one that answers is not.
func Listen(addr, token string) (net.Listener, error) {
	network, address, err := ParseListen(addr, token)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	if network == "unix" {
		ln, err = listenUnix(address)
	} else {
		ln, err = net.Listen(network, address)
	}
	if err != nil {
		return nil, err
	}
	return guard.Listener(ln, guard.Limits{}), nil
}

// listenUnix listens on a unix socket of mode 0600 at path, in place of a
// socket left there by a runner that died; one that still answers, or a
// file that is not a socket, is left alone and refused.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: something answers there already", path)
		}
		os.Remove(path)
	} else if err == nil {
		return nil, fmt.Errorf("listen on %s: a file that is not a socket is there", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return privsock.Listen(path)
}

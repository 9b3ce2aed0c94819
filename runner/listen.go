package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/graftland/graft/internal/cleartext"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/internal/proc"
)

// ListenConfig is where a runner listens, and what guards it there.
type ListenConfig struct {
	// Addr is tcp://HOST:PORT or unix://PATH.
	Addr string
	// Token is the bearer token; required on TCP.
	Token string
	// TLS says whether the runner serves TLS there (Serve is given the
	// config); beyond loopback, TCP requires it.
	TLS bool
	// InsecurePlaintext allows plain TCP on an address beyond loopback.
	InsecurePlaintext bool
}

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

// Validate checks the address and the token (ParseListen), and TLS on a
// TCP address beyond loopback (a *PlaintextError), before anything
// listens; it returns what ParseListen does.
func (c ListenConfig) Validate() (network, address string, err error) {
	network, address, err = ParseListen(c.Addr, c.Token)
	if err != nil || network != "tcp" {
		return network, address, err
	}
	hostname, _, _ := net.SplitHostPort(address) // ParseListen checked it
	if !c.TLS && !c.InsecurePlaintext && !cleartext.Loopback(hostname) {
		return "", "", &PlaintextError{Listen: c.Addr}
	}
	return network, address, nil
}

// PlaintextError is a runner's TCP listener beyond loopback without TLS:
// its token would cross the network in the clear.
type PlaintextError struct {
	// Listen is the address asked for.
	Listen string
}

func (e *PlaintextError) Error() string {
	return fmt.Sprintf("graft runner --listen %s: beyond loopback the runner takes its token only over TLS: --tls-cert FILE --tls-key FILE", e.Listen)
}

// Hint tells the operator the way out, and its risk.
func (e *PlaintextError) Hint() string {
	return "serve TLS with a certificate and key (PEM), and give the hosts its CA (tls: {ca: FILE} in the runner's entry of plugins.yaml), or, on a network you trust with the token, pass --insecure-plaintext (and insecurePlaintext: true in the entry)"
}

// Listen listens where c says, once Validate passes, with the pools of
// guard.Listener at their default limits (docs/security.md#listeners).
// A unix socket is made mode
// 0600, so only its owner may talk to the runner; a socket file left at
// its path by a runner that died is replaced, one that answers is not.
func (c ListenConfig) Listen() (net.Listener, error) {
	network, address, err := c.Validate()
	if err != nil {
		return nil, err
	}
	ln := inherited(network)
	if ln == nil && network == "unix" {
		ln, err = listenUnix(address)
	} else if ln == nil {
		ln, err = net.Listen(network, address)
	}
	if err != nil {
		return nil, err
	}
	return guard.Listener(ln, guard.Limits{}), nil
}

// EnvListenFD is set, by a runner that executes its next program in its
// process, to the descriptor of its listener, which the next program
// serves on (Listen): no connection is refused in between
// (docs/upgrade.md).
const EnvListenFD = "GRAFT_RUNNER_LISTEN_FD"

// inherited is the listener the runner's last program handed over, if it
// is one of network; nil when none was.
func inherited(network string) net.Listener {
	s := os.Getenv(EnvListenFD)
	if s == "" {
		return nil
	}
	os.Unsetenv(EnvListenFD)
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return nil
	}
	if _, ok := proc.Listening(fd); !ok {
		return nil // not the listener: what has the number now is not the runner's to close
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil || ln.Addr().Network() != network {
		if ln != nil {
			ln.Close()
		}
		return nil
	}
	return ln
}

// ListenerFile is a descriptor of ln, a listener of Listen, that a
// program executed in this process inherits, for EnvListenFD. The caller
// closes it when that exec fails.
func ListenerFile(ln net.Listener) (*os.File, error) {
	for {
		u, ok := ln.(interface{ Unwrap() net.Listener })
		if !ok {
			break
		}
		ln = u.Unwrap()
	}
	fl, ok := ln.(interface{ File() (*os.File, error) })
	if !ok {
		return nil, fmt.Errorf("a listener of %s cannot be handed over", ln.Addr().Network())
	}
	f, err := fl.File()
	if err != nil {
		return nil, err
	}
	if err := proc.Inheritable(f, true); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
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

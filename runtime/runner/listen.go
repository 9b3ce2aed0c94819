package runner

import (
	"fmt"
	"net"
	"strings"
)

// ParseListen reads a runner's listen address, tcp://HOST:PORT or
// unix://PATH, into a network and an address for net.Listen. Without a
// token it refuses a TCP address other than loopback: a runner starts
// processes for whoever reaches it.
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
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", "", fmt.Errorf("listen %q: %w", addr, err)
	}
	if token == "" && !loopback(host) {
		return "", "", fmt.Errorf("listen %s: a runner listens beyond loopback only with a token (--token-file)", addr)
	}
	return "tcp", hostport, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen listens on addr (see ParseListen). A unix socket is made mode
// 0600, so only its owner may talk to the runner; a socket file left at
// its path by a runner that died is replaced, one that answers is not.
func Listen(addr, token string) (net.Listener, error) {
	network, address, err := ParseListen(addr, token)
	if err != nil {
		return nil, err
	}
	if network == "unix" {
		return listenUnix(address)
	}
	return net.Listen(network, address)
}

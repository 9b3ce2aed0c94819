//go:build linux

package runner

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// TestPlaintextListen: beyond loopback a runner listens on plain TCP only
// when told InsecurePlaintext (--insecure-plaintext); TLS, loopback and a
// unix socket need no such word.
func TestPlaintextListen(t *testing.T) {
	for addr, beyond := range map[string]bool{
		"tcp://0.0.0.0:7070":   true,
		"tcp://:7070":          true,
		"tcp://10.1.2.3:7070":  true,
		"tcp://[::]:7070":      true,
		"tcp://example.com:70": true,
		"tcp://127.0.0.1:7070": false,
		"tcp://127.1.2.3:7070": false,
		"tcp://[::1]:7070":     false,
		"tcp://localhost:7070": false,
		"unix:///run/x.sock":   false,
	} {
		_, _, err := ListenConfig{Addr: addr, Token: "tok"}.Validate()
		var plain *PlaintextError
		assert.Equal(t, beyond, errors.As(err, &plain), "%s: %v", addr, err)
		_, _, err = ListenConfig{Addr: addr, Token: "tok", TLS: true}.Validate()
		assert.NoError(t, err, "%s with TLS", addr)
		_, _, err = ListenConfig{Addr: addr, Token: "tok", InsecurePlaintext: true}.Validate()
		assert.NoError(t, err, "%s with InsecurePlaintext", addr)
	}
	_, _, err := ListenConfig{Addr: "tcp://0.0.0.0:7070"}.Validate()
	var need interface{ Hint() string }
	require.ErrorAs(t, err, &need)
	assert.Contains(t, err.Error(), "requires a token", "the token first")

	_, _, err = ListenConfig{Addr: "tcp://0.0.0.0:7070", Token: "tok"}.Validate()
	assert.EqualError(t, err, "graft runner --listen tcp://0.0.0.0:7070: beyond loopback the runner takes its token only over TLS: --tls-cert FILE --tls-key FILE")
	var plain *PlaintextError
	require.ErrorAs(t, err, &plain)
	assert.Contains(t, plain.Hint(), "--insecure-plaintext")
	assert.Contains(t, plain.Hint(), "tls: {ca: FILE}")
}

// TestPlaintextListenBeyondLoopback: on an address beyond loopback, one of
// a network namespace of the test's own, a runner without TLS refuses to
// listen, and nothing listens there; with InsecurePlaintext it listens.
func TestPlaintextListenBeyondLoopback(t *testing.T) {
	if !testsupport.InNetNS(t) {
		return
	}
	hostport := net.JoinHostPort(testsupport.Beyond.String(), "7070")
	lc := ListenConfig{Addr: "tcp://" + hostport, Token: "tok"}
	ln, err := lc.Listen()
	var plain *PlaintextError
	require.ErrorAs(t, err, &plain)
	assert.Nil(t, ln)
	_, err = net.Dial("tcp", hostport)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "nothing listens there")

	lc.InsecurePlaintext = true
	ln, err = lc.Listen()
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", hostport)
	require.NoError(t, err, "it listens")
	c.Close()
}

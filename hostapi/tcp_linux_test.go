package hostapi

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// TestNoTokenInClearBeyondLoopback: a client without TLS refuses to send
// its token to an address beyond loopback, before a byte leaves it,
// unless --insecure-plaintext. The address is one of a network namespace
// of the test's own.
func TestNoTokenInClearBeyondLoopback(t *testing.T) {
	if !testsupport.InNetNS(t) {
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort(testsupport.Beyond.String(), "0"))
	require.NoError(t, err)
	rec, addr := serve(t, l, false)
	token := secret[len("Bearer "):]

	c, err := NewTCPClient(TCP{Addr: addr, Token: token})
	require.NoError(t, err)
	_, err = c.Status(context.Background())
	c.Close()
	var plain *PlaintextError
	require.ErrorAs(t, err, &plain)
	assert.Contains(t, err.Error(), "--tls-ca")
	assert.Contains(t, plain.Hint(), "--insecure-plaintext")
	assert.Empty(t, rec.Bytes(), "not a byte was sent")

	insecure, err := NewTCPClient(TCP{Addr: addr, Token: token, InsecurePlaintext: true})
	require.NoError(t, err)
	defer insecure.Close()
	_, err = insecure.Status(context.Background())
	require.NoError(t, err, "--insecure-plaintext sends it")
	assert.Contains(t, string(rec.Bytes()), "s3cr3t")
}

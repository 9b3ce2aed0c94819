//go:build linux

package remote

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/internal/tlsconf"
	"github.com/graftland/graft/runner"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// TestNoTokenInClearBeyondLoopback: over plain TCP the host sends a
// runner's token only to a loopback far end, checked on the connection:
// to a runner beyond loopback not a byte goes, and the start fails naming
// the runner and the address reached, unless insecurePlaintext. The
// address is one of a network namespace of the test's own.
func TestNoTokenInClearBeyondLoopback(t *testing.T) {
	if !testsupport.InNetNS(t) {
		return
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(testsupport.Beyond.String(), "0"))
	require.NoError(t, err)
	rec := testsupport.Record(ln)
	defer serveRunner(t, t.TempDir(), rec, testToken)()
	addr := "tcp://" + ln.Addr().String()

	r, err := New(Config{Name: "edge", Address: addr, Token: testToken, ShutdownTimeout: shutdown, Margin: margin, Logger: testLogger(t), Holder: t.Name()})
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Start(context.Background(), runtime.Request{Project: "shop", Output: runtimetest.NewRecorder()}.For(helper("api", "cooperative")))
	var remote *RemoteError
	require.ErrorAs(t, err, &remote)
	var plain *PlaintextError
	require.ErrorAs(t, err, &plain)
	assert.Equal(t, "edge", plain.Runner)
	assert.Equal(t, addr, plain.Address)
	assert.Equal(t, ln.Addr().String(), plain.Remote, "the address reached")
	assert.Contains(t, err.Error(), "runner edge at "+addr+" (reached "+ln.Addr().String()+"): beyond loopback")
	assert.Contains(t, err.Error(), "tls: {ca: FILE}")
	assert.Contains(t, plain.Hint(), "runners.edge.insecurePlaintext: true")
	assert.NotContains(t, err.Error(), testToken)
	assert.Empty(t, rec.Bytes(), "not a byte was sent")

	// insecurePlaintext, as an apply gives it: the operator lets the
	// token cross this network.
	require.NoError(t, r.Update(Config{Token: testToken, InsecurePlaintext: true}))
	out := runtimetest.NewRecorder()
	h, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
	require.NoError(t, err, "insecurePlaintext sends it")
	require.True(t, out.WaitFor("ready", 10*time.Second))
	_, err = h.Stop(context.Background())
	require.NoError(t, err)
	assert.Contains(t, string(rec.Bytes()), "Bearer "+testToken)
}

// TestPlainClientOfTLSRunnerSendsNoToken: a host without tls: for a
// runner that serves TLS is told so, and the token never left it: its
// first request, OPTIONS *, carries none, and only once it is answered
// does the token go.
func TestPlainClientOfTLSRunnerSendsNoToken(t *testing.T) {
	dir := t.TempDir()
	testsupport.WriteCerts(t, dir)
	conf, err := tlsconf.Server(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), "")
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := testsupport.Record(ln)
	run, err := runner.Open(t.TempDir(), runner.Options{Lease: lease, Grace: grace, Token: testToken, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- run.Serve(ctx, rec, "tcp://"+ln.Addr().String(), conf) }()
	defer func() {
		stop()
		assert.NoError(t, <-served)
	}()

	r := newRemote(t, "tcp://"+ln.Addr().String(), nil)
	defer r.Close()
	_, err = r.Start(context.Background(), runtime.Request{Project: "shop", Output: runtimetest.NewRecorder()}.For(helper("api", "cooperative")))
	var remote *RemoteError
	require.ErrorAs(t, err, &remote)
	var tlsErr *TLSRequiredError
	require.ErrorAs(t, err, &tlsErr)
	assert.Contains(t, err.Error(), "serves TLS: add tls: {ca: FILE}")
	assert.Contains(t, string(rec.Bytes()), "OPTIONS * HTTP/1.1", "the first request reached it")
	assert.NotContains(t, string(rec.Bytes()), testToken, "the token never left the host")
}

// TestPlainClientProbesOnce: over plain TCP on loopback the first
// request carries no token, and is made once per client: every request
// after it carries the token.
func TestPlainClientProbesOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := testsupport.Record(ln)
	defer serveRunner(t, t.TempDir(), rec, testToken)()

	r := newRemote(t, "tcp://"+ln.Addr().String(), nil)
	defer r.Close()
	for range 2 {
		out := runtimetest.NewRecorder()
		h, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
		require.NoError(t, err)
		require.True(t, out.WaitFor("ready", 10*time.Second))
		_, err = h.Stop(context.Background())
		require.NoError(t, err)
	}
	got := string(rec.Bytes())
	assert.Equal(t, 1, strings.Count(got, "OPTIONS * HTTP/1.1"), "one probe for the client")
	assert.Equal(t, strings.Count(got, " HTTP/1.1\r\n")-1, strings.Count(got, "Bearer "+testToken), "every request but the probe carries the token")
}

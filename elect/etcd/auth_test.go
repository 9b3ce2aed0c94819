package etcd

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/etcdtest"
	"github.com/graftland/graft/internal/testsupport"
)

// TestTLS: with a server that serves over TLS and wants a client
// certificate, a host with the CA, its certificate and its key leads; one
// without a client certificate is refused (the handshake fails, and the
// client retries it until the read's deadline).
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	testsupport.WriteCerts(t, dir)
	srv := etcdtest.StartTLS(t, &etcdtest.TLS{CA: filepath.Join(dir, "ca.pem"),
		Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server.key")})

	cfg := elect.EtcdConfig{Endpoints: []string{srv.Endpoint()}, Prefix: "/tls/", Instance: "i", HostID: "h1",
		Address: "h1.test:80", SessionTTL: testTTL, Renew: testRenew,
		CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "client.pem"), Key: filepath.Join(dir, "client.key")}
	e, err := Open(cfg)
	require.NoError(t, err)
	defer e.Close()
	term, err := e.Campaign(t.Context())
	require.NoError(t, err)
	term.Close()

	cfg.Cert, cfg.Key, cfg.HostID = "", "", "h2"
	anon, err := Open(cfg)
	require.NoError(t, err)
	defer anon.Close()
	_, _, err = anon.Leader(t.Context())
	require.Error(t, err, "a client without a certificate is refused")
	t.Logf("without a client certificate: %v", err)
}

// TestAuth: with authentication on, a host with the right password
// leads; one with a wrong one is refused, and says why.
func TestAuth(t *testing.T) {
	srv := etcdtest.Start(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	ctx := t.Context()
	_, err = c.UserAdd(ctx, "root", "s3cret")
	require.NoError(t, err)
	_, err = c.UserGrantRole(ctx, "root", "root")
	require.NoError(t, err)
	_, err = c.AuthEnable(ctx)
	require.NoError(t, err)
	c.Close()

	cfg := elect.EtcdConfig{Endpoints: []string{srv.Endpoint()}, Prefix: "/auth/", Instance: "i", HostID: "h1",
		Address: "h1.test:80", SessionTTL: testTTL, Renew: testRenew, Username: "root", Password: "s3cret"}
	e, err := Open(cfg)
	require.NoError(t, err)
	defer e.Close()
	term, err := e.Campaign(ctx)
	require.NoError(t, err)
	defer term.Close()
	l, _, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, term.Epoch(), l.Epoch)

	cfg.Password, cfg.HostID = "wrong", "h2"
	bad, err := Open(cfg)
	if err == nil {
		defer bad.Close()
		_, _, err = bad.Leader(ctx)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "authentication failed")
}

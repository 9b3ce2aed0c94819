package tlsconf

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestErrors: each bad input is refused naming what is wrong; the
// certificates that work are proven end to end by the TLS scripts of
// cmd/graft and the runner's TestTLS.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))
	missing := filepath.Join(dir, "missing.pem")

	_, err := Server("", "key", "")
	assert.EqualError(t, err, "tls: want both a certificate and its key")
	_, err = Server(missing, missing, "")
	assert.ErrorContains(t, err, "tls: open "+missing)
	_, err = Server(notPEM, notPEM, "")
	assert.ErrorContains(t, err, "tls: ")

	_, err = Client(notPEM, "", "")
	assert.EqualError(t, err, "tls: CA "+notPEM+": no PEM certificate in it")
	_, err = Client(missing, "", "")
	assert.ErrorContains(t, err, "tls: CA: open "+missing)
	_, err = Client("", "cert.pem", "")
	assert.EqualError(t, err, "tls: a client certificate needs both its certificate and its key")
	_, err = Client("", missing, missing)
	assert.ErrorContains(t, err, "tls: client certificate: open "+missing)
}

// TestClientDefaults: without a CA file a client trusts the system's CAs
// (RootCAs nil), and never speaks below TLS 1.2.
func TestClientDefaults(t *testing.T) {
	conf, err := Client("", "", "")
	require.NoError(t, err)
	assert.Nil(t, conf.RootCAs)
	assert.Empty(t, conf.Certificates)
	assert.Equal(t, uint16(tls.VersionTLS12), conf.MinVersion)
}

package remotes

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/graftland/graft/spec"
)

// tlsConfig is the TLS config of a runner's connections, its files
// read now, and a digest of their contents.
func tlsConfig(desired *spec.Spec, t *spec.RunnerTLS) (*tls.Config, string, error) {
	// sum tells one setting from another: the files' contents, not only
	// their names, so that a renewed certificate is taken at the next
	// apply.
	sum := sha256.New()
	fmt.Fprintf(sum, "%q\n", t.ServerName)
	read := func(p string) ([]byte, error) {
		b, err := os.ReadFile(desired.Path(p))
		fmt.Fprintf(sum, "%d\n", len(b))
		sum.Write(b)
		return b, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pem, err := read(t.CA)
		if err != nil {
			return nil, "", err
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("%s: no PEM certificate in it", t.CA)
		}
	}
	if t.Cert != "" {
		certPEM, err := read(t.Cert)
		if err != nil {
			return nil, "", err
		}
		keyPEM, err := read(t.Key)
		if err != nil {
			return nil, "", err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, "", fmt.Errorf("%s and %s: %w", t.Cert, t.Key, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, hex.EncodeToString(sum.Sum(nil)), nil
}

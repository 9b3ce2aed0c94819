package runner

import (
	"crypto/tls"

	"github.com/graftland/graft/internal/tlsconf"
)

// TLSConfig is the TLS of a runner serving with the certificate and key
// in certFile and keyFile (PEM). With clientCA, a PEM file of one or more
// certificates, every client must present a certificate one of them
// signed.
func TLSConfig(certFile, keyFile, clientCA string) (*tls.Config, error) {
	return tlsconf.Server(certFile, keyFile, clientCA)
}

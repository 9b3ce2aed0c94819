// Package tlsconf makes the TLS configurations of graft's daemons and
// clients from PEM files: a daemon's certificate, the CAs it accepts
// client certificates from, and a client's CAs and certificate.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Server is the TLS of a daemon serving with the certificate and key in
// certFile and keyFile (PEM). With clientCA, a PEM file of one or more
// certificates, every client must present a certificate one of them
// signed.
func Server(certFile, keyFile, clientCA string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tls: want both a certificate and its key")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pool, err := pool("client CA", clientCA)
		if err != nil {
			return nil, err
		}
		conf.ClientCAs = pool
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf, nil
}

// Client is the TLS of a client that trusts the CAs in caFile (PEM; the
// system's when empty) and, with certFile and keyFile, presents that
// certificate to daemons that ask for one.
func Client(caFile, certFile, keyFile string) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := pool("CA", caFile)
		if err != nil {
			return nil, err
		}
		conf.RootCAs = pool
	}
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "" || keyFile == "":
		return nil, errors.New("tls: a client certificate needs both its certificate and its key")
	default:
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// pool reads the certificates of a PEM file; what names it in errors.
func pool(what, file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", what, err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls: %s %s: no PEM certificate in it", what, file)
	}
	return p, nil
}

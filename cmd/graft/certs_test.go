//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// gencerts DIR writes, for the TLS scripts, a CA (ca.pem) with a server
// certificate for loopback (server.pem, server.key) and a client
// certificate (client.pem, client.key), and another CA (other-ca.pem)
// with a client certificate of its own (other-client.pem,
// other-client.key): real certificates, made here with crypto/x509.
func cmdGenCerts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gencerts dir")
	}
	genCerts(ts.MkAbs(args[0]), ts.Check)
}

// genCerts writes the certificates gencerts describes into dir; check
// ends the test on an error.
func genCerts(dir string, check func(error)) {
	check(os.MkdirAll(dir, 0o700))
	ca, caKey := newCA(check, dir, "ca", "graft test CA")
	leaf(check, dir, "server", ca, caKey, x509.ExtKeyUsageServerAuth)
	leaf(check, dir, "client", ca, caKey, x509.ExtKeyUsageClientAuth)
	other, otherKey := newCA(check, dir, "other-ca", "another CA")
	leaf(check, dir, "other-client", other, otherKey, x509.ExtKeyUsageClientAuth)
}

// newCA makes a self-signed CA and writes its certificate as NAME.pem.
func newCA(check func(error), dir, name, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	check(err)
	cert, err := x509.ParseCertificate(der)
	check(err)
	writePEM(check, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	return cert, key
}

// leaf makes a certificate for loopback that ca signs, for usage, and
// writes it as NAME.pem and its key as NAME.key.
func leaf(check func(error), dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	check(err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	check(err)
	writePEM(check, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	check(err)
	writePEM(check, filepath.Join(dir, name+".key"), "PRIVATE KEY", keyDER)
}

func writePEM(check func(error), path, typ string, der []byte) {
	check(os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

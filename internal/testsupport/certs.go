package testsupport

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
)

// WriteCerts makes dir and writes into it the certificates of the tests
// of TLS: a CA (ca.pem) with a certificate it signs for a server on
// loopback (server.pem, server.key) and one for a client (client.pem,
// client.key); and another CA (other-ca.pem) with a client certificate
// of its own (other-client.pem, other-client.key), which the first CA
// does not know. The certificates are real ones, made with crypto/x509,
// valid from an hour ago for a day; a leaf names localhost, 127.0.0.1
// and ::1. Keys are PKCS #8, every file is mode 0600.
func WriteCerts(t TB, dir string) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	if err := writeCerts(dir); err != nil {
		t.Fatalf("write the test certificates: %v", err)
	}
}

func writeCerts(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := newAuthority(dir, "ca", "graft test CA")
	if err != nil {
		return err
	}
	other, err := newAuthority(dir, "other-ca", "another CA")
	if err != nil {
		return err
	}
	for _, l := range []struct {
		name  string
		by    *authority
		usage x509.ExtKeyUsage
	}{
		{"server", ca, x509.ExtKeyUsageServerAuth},
		{"client", ca, x509.ExtKeyUsageClientAuth},
		{"other-client", other, x509.ExtKeyUsageClientAuth},
	} {
		if err := l.by.leaf(dir, l.name, l.usage); err != nil {
			return err
		}
	}
	return nil
}

// authority is a CA of WriteCerts: its certificate and its key.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newAuthority makes a self-signed CA named cn and writes its
// certificate as NAME.pem in dir.
func newAuthority(dir, name, cn string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
}

// leaf makes a certificate for loopback, for usage, that a signs, and
// writes it as NAME.pem in dir and its key as NAME.key.
func (a *authority) leaf(dir, name string, usage x509.ExtKeyUsage) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der); err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".key"), "PRIVATE KEY", keyDER)
}

// writePEM writes der as one PEM block of typ at path, mode 0600.
func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

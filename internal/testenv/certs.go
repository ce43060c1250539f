package testenv

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
	"testing"
	"time"
)

// certAuthority is a CA made for one test run.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t testing.TB, name string) *certAuthority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("make CA key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("make CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse CA certificate: %v", err)
	}
	return &certAuthority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a server (with loopback names) or client certificate and
// writes it with its key as certName and keyName under dir.
func (ca *certAuthority) issue(t testing.TB, dir, certName, keyName string, server bool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("make key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: "xrun-test-client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.Subject.CommonName = "localhost"
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("sign certificate: %v", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("encode key: %v", err)
	}
	write(t, filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	write(t, filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("make serial: %v", err)
	}
	return n
}

func write(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// tlsMaterial is the certificate layout of one test daemon.
type tlsMaterial struct {
	serverDir string // ca.pem, server-cert.pem, server-key.pem
	clientDir string // ca.pem, cert.pem, key.pem (DOCKER_CERT_PATH layout)
	wrongCA   string // the same client cert and key, with a CA that did not sign the daemon
}

func makeTLS(t testing.TB, root string) tlsMaterial {
	t.Helper()
	ca := newCA(t, "xrun test CA")
	other := newCA(t, "xrun wrong CA")
	m := tlsMaterial{
		serverDir: filepath.Join(root, "server"),
		clientDir: filepath.Join(root, "client"),
		wrongCA:   filepath.Join(root, "wrong-ca"),
	}
	write(t, filepath.Join(m.serverDir, "ca.pem"), ca.pem, 0o644)
	ca.issue(t, m.serverDir, "server-cert.pem", "server-key.pem", true)
	write(t, filepath.Join(m.clientDir, "ca.pem"), ca.pem, 0o644)
	ca.issue(t, m.clientDir, "cert.pem", "key.pem", false)
	write(t, filepath.Join(m.wrongCA, "ca.pem"), other.pem, 0o644)
	for _, f := range []string{"cert.pem", "key.pem"} {
		data, err := os.ReadFile(filepath.Join(m.clientDir, f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(m.wrongCA, f), data, 0o600)
	}
	return m
}

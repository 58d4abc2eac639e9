package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
)

func TestCheckTransport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr           string
		tls, plaintext bool
		ok             bool
	}{
		{"127.0.0.1:8080", false, false, true},
		{"[::1]:8080", false, false, true},
		{"localhost:8080", false, false, true},
		{"0.0.0.0:8080", false, false, false},
		{"10.1.2.3:8080", false, false, false},
		{":8080", false, false, false},
		{"0.0.0.0:8080", true, false, true},
		{"0.0.0.0:8080", false, true, true},
	}
	for _, tc := range cases {
		err := server.CheckTransport(tc.addr, tc.tls, tc.plaintext)
		if tc.ok {
			require.NoError(t, err, tc.addr)
		} else {
			require.ErrorContains(t, err, "--insecure-allow-plaintext", tc.addr)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "warden-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServesTLS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "w.db"), backend.Options{})
	require.NoError(t, err)
	defer st.Close()
	certFile, keyFile, pool := selfSigned(t)
	// Both listeners on ports the system picks: nothing fixed to collide
	// with another test or a running Warden.
	ls, err := server.Listen("127.0.0.1:0", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := server.New(server.Config{Store: st, ControlAddr: ls.Control.Addr().String(), GatewayAddr: ls.Gateway.Addr().String(),
		TLSCertFile: certFile, TLSKeyFile: keyFile})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.ServeListeners(ctx, ls) }()

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	// The listeners are bound: the first request is served, no retrying.
	for _, ln := range []net.Listener{ls.Control, ls.Gateway} {
		res, err := hc.Get("https://" + ln.Addr().String() + "/healthz")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.NoError(t, res.Body.Close())
		_, err = http.Get("http://" + ln.Addr().String() + "/healthz")
		require.Error(t, err, "plaintext is not served next to TLS")
	}

	cancel()
	require.NoError(t, <-done)

	_, err = server.New(server.Config{Store: st, TLSCertFile: certFile})
	require.ErrorContains(t, err, "TLSKeyFile")
}

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
	ln := listen(t)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{Store: st, ControlAddr: addr, TLSCertFile: certFile, TLSKeyFile: keyFile})
	}()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var res *http.Response
	require.Eventually(t, func() bool {
		res, err = hc.Get("https://" + addr + "/healthz")
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusOK, res.StatusCode)
	res.Body.Close()

	cancel()
	require.NoError(t, <-done)

	_, err = server.New(server.Config{Store: st, TLSCertFile: certFile})
	require.ErrorContains(t, err, "TLSKeyFile")
}

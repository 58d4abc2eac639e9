package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// egressFixture is an egress proxy on a unix socket with an allowed and a
// forbidden upstream of each kind (plain HTTP and TLS).
type egressFixture struct {
	socket                 string
	allowedHTTP, otherHTTP *httptest.Server
	allowedTLS, otherTLS   *httptest.Server
	stop                   func()
}

func setupEgress(t *testing.T) *egressFixture {
	t.Helper()
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Proxy-Authorization") != "" || r.Header.Get("Proxy-Connection") != "" {
				http.Error(w, "hop-by-hop header leaked", http.StatusTeapot)
				return
			}
			fmt.Fprint(w, name)
		})
	}
	start := func(name string, tls bool) *httptest.Server {
		s := httptest.NewUnstartedServer(handler(name))
		s.Config.ErrorLog = log.New(io.Discard, "", 0) // tunnels cut by stop are expected
		if tls {
			s.StartTLS()
		} else {
			s.Start()
		}
		return s
	}
	f := &egressFixture{
		allowedHTTP: start("allowed-http", false),
		otherHTTP:   start("other-http", false),
		allowedTLS:  start("allowed-tls", true),
		otherTLS:    start("other-tls", true),
	}
	for _, s := range []*httptest.Server{f.allowedHTTP, f.otherHTTP, f.allowedTLS, f.otherTLS} {
		t.Cleanup(s.Close)
	}
	// Unix socket paths must stay short, so not under t.TempDir().
	dir, err := os.MkdirTemp("", "wse-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	f.socket = filepath.Join(dir, "p.sock")
	ln, err := net.Listen("unix", f.socket)
	require.NoError(t, err)
	allow, errs := parseAllowHosts([]string{mustHost(t, f.allowedHTTP.URL), mustHost(t, f.allowedTLS.URL)})
	require.Empty(t, errs)
	f.stop = serveEgress(context.Background(), ln, allow, slog.New(slog.DiscardHandler))
	t.Cleanup(f.stop)
	return f
}

// client returns an HTTP client that uses the egress proxy for every URL.
func (f *egressFixture) client(tlsFrom *httptest.Server) *http.Client {
	tr := tlsFrom.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "egress.invalid"})
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", f.socket)
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func TestEgressProxy(t *testing.T) {
	t.Parallel()
	f := setupEgress(t)
	tests := []struct {
		name       string
		server     *httptest.Server
		wantStatus int
		wantBody   string
		wantErr    string
	}{
		{name: "allowed plain HTTP is forwarded", server: f.allowedHTTP, wantStatus: 200, wantBody: "allowed-http"},
		{name: "other plain HTTP is refused", server: f.otherHTTP, wantStatus: 403, wantBody: "sandbox egress: destination not allowed\n"},
		{name: "allowed TLS is tunneled", server: f.allowedTLS, wantStatus: 200, wantBody: "allowed-tls"},
		{name: "other TLS is refused at CONNECT", server: f.otherTLS, wantErr: "Forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodGet, tt.server.URL, nil)
			require.NoError(t, err)
			if strings.HasPrefix(tt.server.URL, "http:") {
				// Hop-by-hop: the proxy must not pass it on (inside a
				// CONNECT tunnel it cannot see it at all).
				req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
			}
			resp, err := f.client(tt.server).Do(req)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.wantStatus, resp.StatusCode)
			require.Equal(t, tt.wantBody, string(body))
		})
	}
}

func TestEgressProxy_rejectsNonProxyRequests(t *testing.T) {
	t.Parallel()
	f := setupEgress(t)
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: " + mustHost(t, f.allowedHTTP.URL) + "\r\n\r\n",
		"GET https://" + mustHost(t, f.allowedTLS.URL) + "/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT nohostport HTTP/1.1\r\nHost: nohostport\r\n\r\n",
	} {
		c, err := net.Dial("unix", f.socket)
		require.NoError(t, err)
		_, err = io.WriteString(c, raw)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
		c.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, raw)
	}
}

func TestEgressProxy_stopClosesTunnels(t *testing.T) {
	t.Parallel()
	f := setupEgress(t)
	c, err := net.Dial("unix", f.socket)
	require.NoError(t, err)
	defer c.Close()
	target := mustHost(t, f.allowedTLS.URL)
	_, err = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	f.stop()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "stop must close the open tunnel, not leave it to time out")
}

// mustHost returns the host:port of rawURL.
func mustHost(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Host
}

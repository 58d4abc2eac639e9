package router

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUpstream: the router's own connections to a plain-HTTP provider
// are reused, survive the provider closing them while idle, read
// Content-Length, chunked and close-delimited answers, and give up on a
// request whose caller went away.
func TestUpstream(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	big := strings.Repeat("x", 10000)
	block := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			_, _ = w.Write(b)
		case "/chunked":
			_, _ = io.WriteString(w, big[:5000])
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, big[5000:])
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		case "/block":
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(func() { close(block); srv.Close() })
	ups := newUpstreams(4)
	t.Cleanup(ups.close)
	u := ups.get(srv.Listener.Addr().String(), srv.Listener.Addr().String())
	call := func(ctx context.Context, path, body string) (int, string, error) {
		resp, err := u.post(ctx, path, []byte(body), []header{{"Accept", "text/plain"}})
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}

	for i := range 3 {
		status, body, err := call(t.Context(), "/echo", `{"n":`+string(rune('0'+i))+`}`)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, `{"n":`+string(rune('0'+i))+`}`, body)
	}
	require.EqualValues(t, 1, conns.Load(), "sequential calls share one connection")

	srv.CloseClientConnections()
	_, body, err := call(t.Context(), "/echo", "again")
	require.NoError(t, err, "a connection the provider closed while idle is replaced")
	require.Equal(t, "again", body)

	_, body, err = call(t.Context(), "/chunked", "")
	require.NoError(t, err)
	require.True(t, body == big, "a chunked answer is read whole: %d bytes of %d", len(body), len(big))
	_, body, err = call(t.Context(), "/close", "")
	require.NoError(t, err)
	require.Equal(t, "bye", body)
	_, body, err = call(t.Context(), "/echo", "after")
	require.NoError(t, err)
	require.Equal(t, "after", body)

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { _, _, err := call(ctx, "/block", ""); errc <- err }()
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled, "a caller that goes away ends the provider request")

	full := newUpstreams(1)
	t.Cleanup(full.close)
	fu := full.get(srv.Listener.Addr().String(), srv.Listener.Addr().String())
	resp, err := fu.post(t.Context(), "/chunked", nil, nil)
	require.NoError(t, err)
	_, err = fu.post(t.Context(), "/echo", nil, nil)
	require.True(t, errors.Is(err, errUpstreamFull), "past its limit a pool refuses: %v", err)
	_ = resp.Body.Close()
	_, err = fu.post(t.Context(), "/echo", nil, nil)
	require.NoError(t, err, "a connection closed early frees its place")
}

package upstream

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
	"time"

	"github.com/stretchr/testify/require"
)

// countingServer starts an HTTP server of handler and returns it, a pool
// of at most 4 connections to it and the count of connections it
// accepted; release is closed before the server at the end of the test.
func countingServer(t *testing.T, release chan struct{}, handler http.HandlerFunc) (*httptest.Server, *Pool, *atomic.Int64) {
	t.Helper()
	conns := &atomic.Int64{}
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(func() { close(release); srv.Close() })
	ups := NewPools(4)
	t.Cleanup(ups.Close)
	return srv, ups.Get(srv.Listener.Addr().String(), srv.Listener.Addr().String()), conns
}

// TestUpstream: the lean client's connections to a plain-HTTP server
// are reused, survive the server closing them while idle, read
// Content-Length, chunked and close-delimited answers, and give up on a
// request whose caller went away.
func TestUpstream(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 10000)
	block := make(chan struct{})
	srv, u, conns := countingServer(t, block, func(w http.ResponseWriter, r *http.Request) {
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
	})
	call := func(ctx context.Context, path, body string) (int, string, error) {
		resp, err := u.Post(ctx, path, []byte(body), []Header{{"Accept", "text/plain"}})
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
	require.NoError(t, err, "a connection the server closed while idle is replaced")
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
	require.ErrorIs(t, <-errc, context.Canceled, "a caller that goes away ends the request to the server")

	full := NewPools(1)
	t.Cleanup(full.Close)
	fu := full.Get(srv.Listener.Addr().String(), srv.Listener.Addr().String())
	resp, err := fu.Post(t.Context(), "/chunked", nil, nil)
	require.NoError(t, err)
	_, err = fu.Post(t.Context(), "/echo", nil, nil)
	require.True(t, errors.Is(err, ErrFull), "past its limit a pool refuses: %v", err)
	_ = resp.Body.Close()
	_, err = fu.Post(t.Context(), "/echo", nil, nil)
	require.NoError(t, err, "a connection closed early frees its place")
}

// TestFor: only plain-HTTP URLs without credentials get the lean
// connections; the rest stay with net/http. (net/http reads the proxy
// settings once a process, so a proxied URL is not tried here.)
func TestFor(t *testing.T) {
	t.Parallel()
	ups := NewPools(4)
	t.Cleanup(ups.Close)
	for _, tc := range []struct {
		url, addr, uri string
		ok             bool
	}{
		{url: "http://127.0.0.1:9000/v1/mcp?x=1", addr: "127.0.0.1:9000", uri: "/v1/mcp?x=1", ok: true},
		{url: "http://tools.internal/mcp", addr: "tools.internal:80", uri: "/mcp", ok: true},
		{url: "https://api.example.com/v1"},
		{url: "http://user:pw@127.0.0.1:9000/"},
		{url: "::not a url"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			p, uri, ok := ups.For(tc.url)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.addr, p.addr)
				require.Equal(t, tc.uri, uri)
			}
		})
	}
}

// TestCloseSoon: a body closed before its end keeps its connection when
// the server ends it right after, and loses it when the server does not.
func TestCloseSoon(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	_, u, conns := countingServer(t, hold, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"id\":1}\n\n")
		w.(http.Flusher).Flush()
		if r.URL.Path == "/hold" {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
	})
	state := func() (idle, open int) {
		u.mu.Lock()
		defer u.mu.Unlock()
		return len(u.idle), u.open
	}
	// closeSoon reads the stream's one event, hands its body to
	// CloseSoon and then ends the caller's context, as a request handler
	// does when it returns: the drain goes on without it.
	closeSoon := func(path string, wait time.Duration) {
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := u.Post(ctx, path, nil, nil)
		require.NoError(t, err)
		ev := make([]byte, len("data: {\"id\":1}\n\n"))
		_, err = io.ReadFull(resp.Body, ev)
		require.NoError(t, err)
		require.Equal(t, "data: {\"id\":1}\n\n", string(ev))
		CloseSoon(resp.Body, wait, 4096)
		cancel()
	}

	for range 3 {
		closeSoon("/end", time.Second)
		require.Eventually(t, func() bool { idle, open := state(); return idle == 1 && open == 1 }, 5*time.Second, time.Millisecond)
	}
	require.EqualValues(t, 1, conns.Load(), "a drained stream's connection is reused")

	closeSoon("/hold", 10*time.Millisecond)
	require.Eventually(t, func() bool { idle, open := state(); return idle == 0 && open == 0 }, 5*time.Second, time.Millisecond,
		"a stream the server keeps open is closed after the wait")
	_, body, err := func() (int, string, error) {
		resp, err := u.Post(t.Context(), "/end", nil, nil)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}()
	require.NoError(t, err)
	require.Equal(t, "data: {\"id\":1}\n\n", body)
	require.EqualValues(t, 2, conns.Load())

	// A reused connection carries no deadline of an earlier drain.
	closeSoon("/end", 20*time.Millisecond)
	require.Eventually(t, func() bool { idle, _ := state(); return idle == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(30 * time.Millisecond) // past the drain's deadline
	resp, err := u.Post(t.Context(), "/end", nil, nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.EqualValues(t, 2, conns.Load())
}

package router

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/listener"
)

// TestInFlightLimit: past MaxInFlight calls at once, a call is answered
// 503 with Retry-After, in the caller's wire format, and served again
// once there is room.
func TestInFlightLimit(t *testing.T) {
	t.Parallel()
	r := &Router{cfg: Config{MaxInFlight: 1}}
	entered, release := make(chan struct{}), make(chan struct{})
	slow := func(w *reply) {
		entered <- struct{}{}
		<-release
		_, _ = w.Write([]byte("ok"))
	}
	for _, tc := range []struct {
		name string
		fail func(*reply, *apierr.Error)
		typ  func(map[string]any) any
	}{
		{"openai", writeError, func(b map[string]any) any { return b["error"].(map[string]any)["code"] }},
		{"anthropic", writeAnthError, func(b map[string]any) any { return b["error"].(map[string]any)["code"] }},
	} {
		app := fiber.New()
		app.Post("/", r.handle(r.limited(slow, tc.fail)))
		call := func() *http.Response {
			resp, err := app.Test(httptest.NewRequest(http.MethodPost, "/", nil), -1)
			require.NoError(t, err, tc.name)
			return resp
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = call().Body.Close()
		}()
		<-entered
		resp := call()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, tc.name)
		require.Equal(t, "1", resp.Header.Get("Retry-After"), tc.name)
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), tc.name)
		require.Equal(t, "Unavailable", tc.typ(body), tc.name)
		release <- struct{}{}
		<-done
		go func() { <-entered; release <- struct{}{} }()
		require.Equal(t, http.StatusOK, call().StatusCode, "%s: served again once a call ended", tc.name)
	}
}

// TestConnLimit: past MaxConns open connections, a new one is answered
// 503 with Retry-After and closed; the open ones are still served.
func TestConnLimit(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	go func() { _ = app.Listener(newConnLimit(ln, 1)) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	get := func(c net.Conn) *http.Response {
		t.Helper()
		_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		return resp
	}
	first, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer first.Close()
	require.Equal(t, http.StatusOK, get(first).StatusCode)
	second, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer second.Close()
	resp := get(second)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "Unavailable", body["error"].(map[string]any)["code"])
	require.Equal(t, http.StatusOK, get(first).StatusCode, "the open connection is still served")
}

// TestUnusedConnClosedSilently: a connection that sends nothing before the
// header timeout is closed without an answer, which a client's pool would
// report as unsolicited.
func TestUnusedConnClosedSilently(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	to := listener.Timeouts{ReadHeader: 50 * time.Millisecond}
	app := fiber.New(to.FiberConfig(fiber.Config{DisableStartupMessage: true}))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	go func() { _ = app.Listener(newConnLimit(ln, 8)) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	b, err := io.ReadAll(c)
	require.NoError(t, err, "closed by the server, not by the test's deadline")
	require.Empty(t, string(b))
}

package listener_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/listener"
)

// logBuffer collects log output from concurrent handlers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serve runs a hardened app with t's timeouts on a fresh port.
func serve(t *testing.T, to listener.Timeouts, logs io.Writer, routes func(*fiber.App)) string {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, nil))
	app := fiber.New(to.FiberConfig(fiber.Config{
		DisableStartupMessage: true,
		ErrorHandler: func(c *fiber.Ctx, err error) error {
			e, ok := apierr.As(err)
			if !ok {
				e = listener.InternalError(listener.RequestIDOf(c))
			}
			return c.Status(e.Status()).JSON(apierr.Body{Error: e})
		},
	}))
	to.Harden(app)
	app.Use(listener.RequestID, listener.Recover(log))
	routes(app)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- app.Listener(ln) }()
	t.Cleanup(func() {
		require.NoError(t, app.Shutdown())
		<-done
	})
	return ln.Addr().String()
}

func TestRecoverAnswersInternalAndKeepsServing(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	addr := serve(t, listener.Timeouts{}, &logs, func(app *fiber.App) {
		app.Get("/panic", func(*fiber.Ctx) error { panic("boom") })
		app.Get("/ok", func(c *fiber.Ctx) error { return c.SendString("ok") })
	})

	// One client, one keep-alive connection: the panic must not cost it.
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	res, err := hc.Get("http://" + addr + "/panic")
	require.NoError(t, err)
	var body apierr.Body
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	_ = res.Body.Close()
	require.Equal(t, http.StatusInternalServerError, res.StatusCode)
	id := res.Header.Get(listener.HeaderRequestID)
	require.NotEmpty(t, id)
	require.Equal(t, apierr.CodeInternal, body.Error.Code)
	require.Equal(t, "internal error (request id "+id+")", body.Error.Message, "no panic detail reaches the client")
	require.Contains(t, logs.String(), "panic in handler")
	require.Contains(t, logs.String(), "requestId="+id)
	require.Contains(t, logs.String(), "listener_test.go", "the stack is logged")

	res, err = hc.Get("http://" + addr + "/ok")
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "ok", string(b))
}

// readUntilClosed reads conn until the server closes it and returns what
// it sent; the deadline only keeps a broken test from hanging.
func readUntilClosed(t *testing.T, conn net.Conn) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	b, err := io.ReadAll(conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server never closed the connection")
	return string(b)
}

// trickle writes s one byte at a time, as a slow-loris client does, until
// the server closes the connection or s runs out.
func trickle(conn net.Conn, s string, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := range len(s) {
		if _, err := conn.Write([]byte{s[i]}); err != nil {
			return
		}
		<-tick.C
	}
}

func TestSlowClientsAreDisconnected(t *testing.T) {
	t.Parallel()
	to := listener.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Idle: 200 * time.Millisecond}
	addr := serve(t, to, io.Discard, func(app *fiber.App) {
		app.Post("/upload", func(c *fiber.Ctx) error { return c.SendString("got it") })
		app.Get("/ok", func(c *fiber.Ctx) error { return c.SendString("ok") })
	})

	cases := []struct {
		name    string
		send    func(net.Conn)
		atLeast time.Duration
	}{
		{name: "headers byte by byte", atLeast: to.ReadHeader, send: func(c net.Conn) {
			trickle(c, "GET /ok HTTP/1.1\r\nHost: x\r\nX-Padding: "+strings.Repeat("a", 10_000)+"\r\n\r\n", 20*time.Millisecond)
		}},
		{name: "body byte by byte", atLeast: to.Read, send: func(c net.Conn) {
			_, _ = io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n")
			trickle(c, strings.Repeat("b", 10_000), 20*time.Millisecond)
		}},
		{name: "idle keep-alive connection", atLeast: to.Idle, send: func(c net.Conn) {
			_, _ = io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The server's deadline starts once it accepts the connection,
			// which is after the dial starts: time from there.
			start := time.Now()
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			go tc.send(conn)
			got := readUntilClosed(t, conn)
			require.GreaterOrEqual(t, time.Since(start), tc.atLeast)
			require.NotContains(t, got, "got it", "the slow request never reached its handler")
		})
	}
}

func TestTimeoutsSpareLongPollsAndStreams(t *testing.T) {
	t.Parallel()
	to := listener.Timeouts{ReadHeader: 100 * time.Millisecond, Read: 100 * time.Millisecond, Idle: 100 * time.Millisecond}
	outlive := 5 * to.ReadHeader
	addr := serve(t, to, io.Discard, func(app *fiber.App) {
		// A long-poll reads nothing while it waits.
		app.Get("/poll", func(c *fiber.Ctx) error {
			<-time.After(outlive)
			return c.SendString("done")
		})
		// A stream writes for longer than every timeout.
		app.Get("/stream", func(c *fiber.Ctx) error {
			c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
				tick := time.NewTicker(to.ReadHeader / 2)
				defer tick.Stop()
				for end := time.Now().Add(outlive); time.Now().Before(end); <-tick.C {
					_, _ = w.WriteString("tick\n")
					if w.Flush() != nil {
						return
					}
				}
				_, _ = w.WriteString("end\n")
			})
			return nil
		})
	})
	for path, want := range map[string]string{"/poll": "done", "/stream": "end\n"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
			req.RequestURI = ""
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(string(b), want), "got %q", b)
		})
	}
}

func TestRecoverHTTP(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	h := listener.RecoverHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		_, _ = io.WriteString(w, "ok")
	}), slog.New(slog.NewTextHandler(&logs, nil)))
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/panic")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusInternalServerError, res.StatusCode)
	require.NotEmpty(t, res.Header.Get(listener.HeaderRequestID))
	require.Contains(t, logs.String(), "panic in handler")
	res, err = http.Get(srv.URL + "/ok")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

func TestNameRequest(t *testing.T) {
	t.Parallel()
	e := apierr.New(apierr.CodeInternal, "the token could not be issued.")
	got := listener.NameRequest(e, "abc")
	require.Equal(t, "the token could not be issued (request id abc)", got.Message)
	require.Equal(t, "the token could not be issued.", e.Message, "the original is not changed")
	require.Same(t, got, listener.NameRequest(got, "abc"))
	nf := apierr.New(apierr.CodeNotFound, "x")
	require.Same(t, nf, listener.NameRequest(nf, "abc"))
}

func TestLogPanicKeepsTheProcess(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer listener.LogPanic(context.Background(), log, "watch stream", "req-1")
		panic("stream broke")
	}()
	<-done
	require.Contains(t, logs.String(), `msg="panic in watch stream"`)
	require.Contains(t, logs.String(), "requestId=req-1")
	require.Contains(t, logs.String(), "stream broke")
}

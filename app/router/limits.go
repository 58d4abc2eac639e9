package router

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-dev/warden/app/apierr"
)

// Overload. A router that falls behind its callers does not queue their
// calls without bound: past MaxInFlight model calls at once a call is
// answered 503 with Retry-After at once, and past MaxConns open client
// connections a new connection gets the same answer and is closed. So a
// burst it cannot serve costs the router neither memory nor file
// descriptors (each call in flight holds a client connection and one to
// its provider), and callers that honour Retry-After (the OpenAI and
// Anthropic SDKs do) come back when it has room.

// retryAfter is the Retry-After of an overload answer, in seconds.
const retryAfter = 1

func overloaded(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.CodeUnavailable, format, args...).WithDetails(map[string]any{"retryAfterSeconds": int64(retryAfter)})
}

// limited serves a model call when fewer than MaxInFlight are being
// served, counting it until its answer is written; fail answers the
// others in the caller's wire format.
func (r *Router) limited(next func(*reply), fail func(*reply, *apierr.Error)) func(*reply) {
	return func(w *reply) {
		if r.inFlight.Add(1) > int64(r.cfg.MaxInFlight) {
			r.inFlight.Add(-1)
			fail(w, overloaded("the model router is serving %d calls, as many as it serves at once; retry in a second", r.cfg.MaxInFlight))
			return
		}
		w.after(func() { r.inFlight.Add(-1) })
		next(w)
	}
}

// connLimit is a listener that refuses connections while max are open.
// It counts the connections it hands out until they are closed.
type connLimit struct {
	net.Listener
	max  int64
	open atomic.Int64
	// refusal is the whole answer written to a refused connection.
	refusal []byte
}

func newConnLimit(ln net.Listener, max int) *connLimit {
	body := errorBody(overloaded("the model router has %d connections open, as many as it keeps; retry in a second", max))
	head := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: " + strconv.Itoa(retryAfter) +
		"\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return &connLimit{Listener: ln, max: int64(max), refusal: append([]byte(head), body...)}
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Load() < l.max {
			l.open.Add(1)
			return &clientConn{Conn: c, l: l}, nil
		}
		go l.refuse(c)
	}
}

// refuse answers 503 and closes the connection. It reads what the client
// sent until the client closes (at most a second), so that the answer is
// not lost to a reset of a connection closed with unread data.
func (l *connLimit) refuse(c net.Conn) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(l.refusal); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	var buf [512]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// clientConn is a client connection: counted until closed, and watched
// for its closing while a call's answer is prepared (watch).
type clientConn struct {
	net.Conn
	l      *connLimit
	closed sync.Once
	// peeked holds a byte the watch read (a pipelined request), given to
	// the server's next Read. Only one of them reads at a time.
	peeked []byte
	// used says the client has sent a byte.
	used bool
}

// Read reads the client's bytes. A connection that times out before its
// first byte reads as closed: fasthttp would answer it with an error the
// client never asked for (a client's pool may open a connection it does
// not use), where net/http closes it silently, as it does an idle
// keep-alive connection.
func (c *clientConn) Read(b []byte) (int, error) {
	if len(c.peeked) > 0 {
		n := copy(b, c.peeked)
		c.peeked = c.peeked[n:]
		return n, nil
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.used = true
	} else if !c.used && errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, io.EOF
	}
	return n, err
}

func (c *clientConn) Close() error {
	c.closed.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// watchAfter is how long an answer takes before watch starts reading its
// connection: a caller that goes away sooner cancels its provider request
// watchAfter after the call began.
const watchAfter = 20 * time.Millisecond

// watch calls cancel when the client closes conn before stop is called,
// so that a caller that goes away cancels its provider request, as
// net/http's background read does. The server does not read a connection
// while its handler runs or its answer is written, so the watch may.
func watch(conn net.Conn, cancel context.CancelFunc) (stop func()) {
	c, ok := conn.(*clientConn)
	if !ok || len(c.peeked) > 0 {
		return func() {}
	}
	var (
		mu      sync.Mutex
		stopped bool
		done    chan struct{}
	)
	// The watch starts only once the answer has taken watchAfter: a
	// waiting read costs a goroutine, two hand-offs between goroutines and
	// three system calls, on every call, and an answer that short is
	// written before a caller's leaving could save the provider much.
	t := time.AfterFunc(watchAfter, func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		_ = c.Conn.SetReadDeadline(time.Time{})
		done = make(chan struct{})
		mu.Unlock()
		defer close(done)
		var b [1]byte
		n, err := c.Conn.Read(b[:])
		if n > 0 {
			c.peeked = append(c.peeked[:0], b[:n]...)
			return
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			cancel()
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		d := done
		mu.Unlock()
		if d == nil {
			t.Stop()
			return
		}
		_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
		<-d
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
}

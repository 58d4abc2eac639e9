package router

import (
	"net"
	"net/http"
	"strconv"
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
// served; fail answers the others in the caller's wire format.
func (r *Router) limited(next http.Handler, fail func(http.ResponseWriter, *apierr.Error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		if r.inFlight.Add(1) > int64(r.cfg.MaxInFlight) {
			r.inFlight.Add(-1)
			fail(w, overloaded("the model router is serving %d calls, as many as it serves at once; retry in a second", r.cfg.MaxInFlight))
			return
		}
		defer r.inFlight.Add(-1)
		next.ServeHTTP(w, hr)
	})
}

// connLimit is a listener that refuses connections while max are open;
// open is kept by the server's ConnState hook. The connections it accepts
// are returned as they are, so that the server still sees a TLS one.
type connLimit struct {
	net.Listener
	max  int64
	open *atomic.Int64
	// refusal is the whole answer written to a refused connection.
	refusal []byte
}

func newConnLimit(ln net.Listener, max int, open *atomic.Int64) *connLimit {
	body := errorBody(overloaded("the model router has %d connections open, as many as it keeps; retry in a second", max))
	head := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: " + strconv.Itoa(retryAfter) +
		"\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return &connLimit{Listener: ln, max: int64(max), open: open, refusal: append([]byte(head), body...)}
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.open.Load() < l.max {
			return c, err
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

// countConns keeps open, the connections the server holds.
func countConns(open *atomic.Int64) func(net.Conn, http.ConnState) {
	return func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
}

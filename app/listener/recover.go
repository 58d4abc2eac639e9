package listener

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
)

// LocalRequestID is the fiber local holding the request id (a string).
const LocalRequestID = "warden.requestID"

// HeaderRequestID carries the request id both ways: a caller may send one
// (at most 64 characters), and every answer names it.
const HeaderRequestID = "X-Request-Id"

// RequestID gives the request an id, taken from X-Request-Id when the
// caller sent a usable one, stores it in the locals and echoes it on the
// answer.
func RequestID(c *fiber.Ctx) error {
	id := c.Get(HeaderRequestID)
	if id == "" || len(id) > 64 {
		id = NewRequestID()
	} else {
		// The header's bytes belong to Fiber's request buffer, reused
		// once the handler returns; the id outlives it in logs.
		id = string([]byte(id))
	}
	c.Locals(LocalRequestID, id)
	c.Set(HeaderRequestID, id)
	return c.Next()
}

// NewRequestID returns 16 random hex characters.
func NewRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RequestIDOf returns the request's id, giving it one (and echoing it)
// when RequestID has not run.
func RequestIDOf(c *fiber.Ctx) string {
	if id, ok := c.Locals(LocalRequestID).(string); ok && id != "" {
		return id
	}
	id := NewRequestID()
	c.Locals(LocalRequestID, id)
	c.Set(HeaderRequestID, id)
	return id
}

// Recover returns middleware that turns a panic in any later handler into
// a 500 Internal error, which the application's ErrorHandler renders in
// the documented shape with the request id. The panic value and its stack
// go to log; the process and the connection keep serving.
func Recover(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			id := RequestIDOf(c)
			log.ErrorContext(c.UserContext(), "panic in handler", "panic", fmt.Sprint(r), "method", c.Method(),
				"path", c.Path(), "requestId", id, "stack", string(debug.Stack()))
			err = InternalError(id)
		}()
		return c.Next()
	}
}

// InternalError is the client's view of an internal failure: no detail,
// only the request id that finds the log entry.
func InternalError(requestID string) *apierr.Error {
	return apierr.New(apierr.CodeInternal, "internal error (request id %s)", requestID)
}

// RecoverHTTP wraps a net/http handler like Recover: a panic is logged
// with its stack and answered 500 in plain text naming the request id
// (when nothing was written yet) instead of net/http's silent connection
// reset. http.ErrAbortHandler is passed on: it is the way to abort a
// response on purpose. Listeners with an error body of their own use
// RecoverHTTPWith.
func RecoverHTTP(h http.Handler, log *slog.Logger) http.Handler {
	return RecoverHTTPWith(h, log, func(w http.ResponseWriter, _ *http.Request, requestID string) {
		http.Error(w, "internal error (request id "+requestID+")", http.StatusInternalServerError)
	})
}

// RecoverHTTPWith wraps a net/http handler in panic recovery that answers
// with answer, the listener's own 500 body, which should name requestID.
// Every request gets an id first, the caller's X-Request-Id when it sent a
// usable one (as RequestID does for Fiber): it is echoed on the answer and
// carried in the request's context (RequestIDFromContext), so the
// handler's own log lines name it too. The panic value and its stack go to
// log with the id.
func RecoverHTTPWith(h http.Handler, log *slog.Logger, answer func(w http.ResponseWriter, r *http.Request, requestID string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderRequestID)
		if id == "" || len(id) > 64 {
			id = NewRequestID()
		}
		w.Header().Set(HeaderRequestID, id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			log.ErrorContext(r.Context(), "panic in handler", "panic", fmt.Sprint(v), "method", r.Method,
				"path", r.URL.Path, "requestId", id, "stack", string(debug.Stack()))
			answer(w, r, id)
		}()
		h.ServeHTTP(w, r)
	})
}

type requestIDKey struct{}

// RequestIDFromContext returns the request id RecoverHTTPWith (or the gRPC
// interceptors) gave the request whose context ctx is; "" outside one.
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NameRequest returns e, or for an Internal error whose message does not
// name the request id yet, a copy that does: every 500 leads to its log
// entry.
func NameRequest(e *apierr.Error, requestID string) *apierr.Error {
	if e.Code != apierr.CodeInternal || strings.Contains(e.Message, requestID) {
		return e
	}
	c := *e
	c.Message = strings.TrimSuffix(c.Message, ".") + " (request id " + requestID + ")"
	return &c
}

// APIHeaders marks every answer as data that is neither sniffed into
// another content type nor stored by a cache: API answers carry tenant
// data and credentials. Handlers may still override either.
func APIHeaders(c *fiber.Ctx) error {
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Next()
}

// LogPanic, deferred at the top of a goroutine a handler starts (a stream
// writer, work that outlives the request), recovers a panic there and logs
// it with its stack: Recover cannot see it, and unrecovered it would end
// the process.
func LogPanic(ctx context.Context, log *slog.Logger, what, requestID string) {
	r := recover()
	if r == nil {
		return
	}
	LogRecovered(ctx, log, what, requestID, r)
}

// LogRecovered logs a panic's value r, recovered by the caller's own
// deferred function, with the stack (call it from that function).
func LogRecovered(ctx context.Context, log *slog.Logger, what, requestID string, r any) {
	log.ErrorContext(ctx, "panic in "+what, "panic", fmt.Sprint(r), "requestId", requestID, "stack", string(debug.Stack()))
}

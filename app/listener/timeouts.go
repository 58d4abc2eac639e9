package listener

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Default timeouts of every listener.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// Timeouts bound how long a client may take to send a request and how long
// an idle keep-alive connection is kept. None bounds the handler or the
// answer: a long-poll (?wait=) reads nothing while it waits, and a watch
// stream and the console's inbox stream (GET /approvals/stream, which ends
// itself after five minutes) only write, so all of them outlive these
// timeouts; no write deadline is set, since it would cut a stream.
type Timeouts struct {
	// ReadHeader is the time from the first byte of a request (or the
	// connection's opening) to the end of its headers: a client that
	// sends its headers byte by byte (slow loris) is disconnected after
	// it.
	ReadHeader time.Duration
	// Read is the time to read the body once the headers are in.
	Read time.Duration
	// Idle is how long a keep-alive connection waits for its next request.
	Idle time.Duration
}

// WithDefaults fills zero fields with the defaults.
func (t Timeouts) WithDefaults() Timeouts {
	if t.ReadHeader <= 0 {
		t.ReadHeader = DefaultReadHeaderTimeout
	}
	if t.Read <= 0 {
		t.Read = DefaultReadTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	return t
}

// FiberConfig sets the header and idle timeouts on cfg. fasthttp's
// ReadTimeout is the deadline for a whole request; here it bounds the
// headers, and Harden moves the deadline for the body once they are in.
func (t Timeouts) FiberConfig(cfg fiber.Config) fiber.Config {
	t = t.WithDefaults()
	cfg.ReadTimeout = t.ReadHeader
	cfg.IdleTimeout = t.Idle
	cfg.WriteTimeout = 0
	return cfg
}

// Harden gives app's server the body read timeout: once a request's
// headers are read, the body has t.Read. Call it on an app built with
// t.FiberConfig, before it serves.
func (t Timeouts) Harden(app *fiber.App) {
	t = t.WithDefaults()
	app.Server().HeaderReceived = func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
		return fasthttp.RequestConfig{ReadTimeout: t.Read}
	}
}

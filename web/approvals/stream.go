package approvals

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Stream defaults: the time-left column refreshes every StreamRefresh,
// and a stream ends after StreamFor (the browser resumes it).
const (
	StreamRefresh = 15 * time.Second
	StreamFor     = 5 * time.Minute
	// streamRetry is the reconnection delay the stream asks of the browser.
	streamRetry = 2 * time.Second
)

// Watcher calls changed whenever an Approval of tenant changes, until ctx
// ends (the server feeds it from the watch hub, app/watch).
type Watcher func(ctx context.Context, tenant string, changed func()) error

// Streamer serves GET /approvals/stream: server-sent events, each an
// "inbox" event carrying the inbox table rendered by the server.
type Streamer struct {
	Handler *Handler
	Watch   Watcher
	// Refresh and For default to StreamRefresh and StreamFor.
	Refresh time.Duration
	For     time.Duration
	// Base ends every stream when the server shuts down (default: never).
	Base context.Context
	Log  *slog.Logger
}

// ParseLastEventID reads the Last-Event-ID a resuming browser sends: the
// decimal id of the last event it saw. Anything else counts as 0, so the
// stream simply starts over (every event carries the whole inbox).
func ParseLastEventID(s string) uint64 {
	if len(s) > 20 {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || n > 1<<53 {
		return 0
	}
	return n
}

// Serve streams the inbox of the signed-in person: at once, on every change
// of an Approval of their tenant and every Refresh, until For has passed,
// the client goes away or the server shuts down. Each event is limited to
// what Service.Inbox returns: the person's tenant and the namespaces where
// app/authz lets them decide.
func (s *Streamer) Serve(c *fiber.Ctx) error {
	p, ok := s.Handler.Env.Principal(c)
	if !ok {
		return fiber.ErrUnauthorized
	}
	id := ParseLastEventID(c.Get("Last-Event-ID"))
	refresh, life, base, log := s.Refresh, s.For, s.Base, s.Log
	if refresh <= 0 {
		refresh = StreamRefresh
	}
	if life <= 0 {
		life = StreamFor
	}
	if base == nil {
		base = context.Background()
	}
	if log == nil {
		log = slog.Default()
	}
	c.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ctx, cancel := context.WithTimeout(base, life)
		defer cancel()
		changed := make(chan struct{}, 1)
		watched := make(chan error, 1)
		go func() {
			watched <- s.Watch(ctx, p.Tenant, func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			})
		}()
		defer func() { cancel(); <-watched }()
		tick := time.NewTicker(refresh)
		defer tick.Stop()
		var buf bytes.Buffer
		send := func() bool {
			id++
			m := InboxModel{}
			recs, err := s.Handler.Service.Inbox(ctx, p)
			if err != nil {
				if ctx.Err() != nil {
					return false
				}
				log.ErrorContext(ctx, "console: approval stream", "err", err, "tenant", p.Tenant)
				m.Error = "Could not list approvals because of an internal error; the list will retry."
			}
			m.Rows = InboxRows(recs, s.Handler.now())
			buf.Reset()
			if err := InboxResults(m).Render(ctx, &buf); err != nil {
				return false
			}
			w.WriteString("retry: " + strconv.FormatInt(streamRetry.Milliseconds(), 10) + "\nid: " + strconv.FormatUint(id, 10) + "\nevent: inbox\n")
			for line := range strings.SplitSeq(buf.String(), "\n") {
				w.WriteString("data: " + strings.TrimSuffix(line, "\r") + "\n")
			}
			w.WriteString("\n")
			return w.Flush() == nil
		}
		if !send() {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-watched:
				watched <- err
				if ctx.Err() == nil {
					log.WarnContext(ctx, "console: approval stream lost the watch", "err", err)
				}
				return
			case <-changed:
			case <-tick.C:
			}
			if !send() {
				return
			}
		}
	})
	return nil
}

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
)

// handleWatch streams changes as newline-delimited JSON:
// {"type":"ADDED|MODIFIED|DELETED|BOOKMARK","object":{…}}.
func (s *Server) handleWatch(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodGet && c.Query("watch") != "true" && c.Query("watch") != "1" {
		return badRequest("GET /v1/resources streams changes: add watch=true (to list, use /v1/namespaces/{ns}/{kind})")
	}
	p := principal(c)
	ns := ""
	if p.Namespace != auth.AllNamespaces {
		ns = p.Namespace
	}
	a := auditOf(c)
	a.verb, a.namespace, a.resource = auth.VerbWatch, ns, "changes:"+c.Query("selector")
	if err := s.check(c, auth.VerbWatch, ns, authz.ObjResources); err != nil {
		return err
	}
	sel, err := parseSelector(c, "")
	if err != nil {
		return err
	}
	// The stream outlives the handler, and Fiber's buffers with it.
	from := strings.Clone(c.Query("resourceVersion"))
	// Check the resume point before the stream starts, so a stale one
	// answers 410 Gone with the documented body instead of a broken stream.
	if from != "" {
		rv, perr := parseVersion(from)
		if perr != nil {
			return badRequest("resourceVersion %q is not one this server issued", from)
		}
		if _, err := s.store.ChangesSince(c.UserContext(), p.Tenant, rv, 1); err != nil {
			return storeError(err)
		}
	}
	scoped := func(o *resource.Object) bool {
		return ns == "" || o.Metadata.Namespace == ns
	}

	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Content-Type-Options", "nosniff")
	ctx, cancel := context.WithCancel(s.base)
	tenant := p.Tenant
	interval := s.cfg.BookmarkInterval
	id := listener.RequestIDOf(c)
	// Send the headers now: the client learns the watch was accepted even
	// before its start point is known.
	c.Context().Response.ImmediateHeaderFlush = true
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer listener.LogPanic(ctx, s.log, "watch stream", id)
		defer cancel()
		s.streamWatch(ctx, cancel, w, tenant, sel, from, scoped, interval)
	})
	return nil
}

// streamWatch writes a watch stream. Only this goroutine writes to w: the hub
// hands events over a channel, and idle BOOKMARKs (which keep proxies from
// closing the stream and find clients that went away) come from a ticker.
// The first BOOKMARK is the hub's, naming the version the stream starts
// after: a client may take it as "from here on nothing is missed", so no
// idle BOOKMARK goes out before it.
func (s *Server) streamWatch(ctx context.Context, cancel context.CancelFunc, w *bufio.Writer, tenant string,
	sel *resource.Selector, from string, scoped func(*resource.Object) bool, interval time.Duration) {
	evc := make(chan api.WatchEvent)
	done := make(chan error, 1)
	go func() {
		done <- s.hub.Watch(ctx, tenant, sel, from, func(ev api.WatchEvent) error {
			select {
			case evc <- ev:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			s.log.Debug("watch ended", "err", err)
		}
	}()
	enc := json.NewEncoder(w)
	write := func(ev api.WatchEvent) bool {
		if enc.Encode(ev) != nil {
			return false
		}
		return w.Flush() == nil
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var last string
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-done:
			done <- err
			return
		case ev := <-evc:
			if ev.Type != api.EventBookmark {
				if !scoped(ev.Object) {
					continue
				}
				ev.Object = present(ev.Object)
			}
			last = ev.Object.Metadata.ResourceVersion
			if !write(ev) {
				return
			}
		case <-ticker.C:
			if last == "" {
				continue
			}
			if !write(api.WatchEvent{Type: api.EventBookmark, Object: &resource.Object{Metadata: resource.ObjectMeta{ResourceVersion: last}}}) {
				return
			}
		}
	}
}

// parseVersion reads a resourceVersion: a non-negative decimal integer.
func parseVersion(s string) (int64, error) {
	n, err := strconv.ParseUint(s, 10, 63)
	return int64(n), err
}

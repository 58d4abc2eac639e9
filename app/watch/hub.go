package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// ringSize is how many recent changes each tenant's ring keeps in memory.
const ringSize = 4096

// fetchBatch is how many change-log entries one store read returns.
const fetchBatch = 1000

// readTimeout bounds one read of the change log: a read that hangs (a
// database that stopped answering) fails, and the next signal or poll
// tries again, instead of stalling the tenant's watchers for good.
const readTimeout = 30 * time.Second

// Hub fans store changes out to watchers. Build it with NewHub and stop it
// with Close.
type Hub struct {
	store store.Store
	log   *slog.Logger

	mu      sync.Mutex
	tenants map[string]*feed
	stop    func()
	quit    chan struct{}
	closed  bool
}

// PollInterval is how often every tenant feed re-reads the change log even
// without a commit signal. Signals are hints: one sent while a replica's
// listener reconnects is lost, and the poll bounds how late such a change
// can arrive.
const PollInterval = 2 * time.Second

// NewHub returns a hub listening to st's commits.
func NewHub(st store.Store, log *slog.Logger) *Hub {
	h := &Hub{store: st, log: log, tenants: map[string]*feed{}, quit: make(chan struct{})}
	stopListen := st.Listen(h.notify)
	go h.poll()
	h.stop = func() {
		stopListen()
		close(h.quit)
	}
	return h
}

func (h *Hub) poll() {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
			h.mu.Lock()
			for _, f := range h.tenants {
				f.poke()
			}
			h.mu.Unlock()
		}
	}
}

// Close stops listening; open watches end.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	h.stop()
	for _, f := range h.tenants {
		f.close()
	}
}

func (h *Hub) notify(tenant string) {
	h.mu.Lock()
	f := h.tenants[tenant]
	h.mu.Unlock()
	if f != nil {
		f.poke()
	}
}

// feed is one tenant's ring and its reader.
type feed struct {
	hub    *Hub
	tenant string
	kick   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	ring    []store.Change // every change in (base, last], ordered by ResourceVersion
	base    int64          // the ring is complete from just after base
	last    int64          // newest version read from the store
	changed chan struct{}  // closed and replaced whenever ring grows
}

func (h *Hub) feedFor(ctx context.Context, tenant string) (*feed, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("watch hub is closed")
	}
	if f := h.tenants[tenant]; f != nil {
		return f, nil
	}
	var last int64
	err := h.store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		last, err = r.CurrentVersion(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read current version: %w", err)
	}
	f := &feed{hub: h, tenant: tenant, kick: make(chan struct{}, 1), done: make(chan struct{}), base: last, last: last, changed: make(chan struct{})}
	h.tenants[tenant] = f
	go f.run()
	return f, nil
}

func (f *feed) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *feed) close() { f.once.Do(func() { close(f.done) }) }

// run reads new changes whenever the store signals a commit.
func (f *feed) run() {
	for {
		select {
		case <-f.done:
			f.mu.Lock()
			close(f.changed)
			f.changed = nil
			f.mu.Unlock()
			return
		case <-f.kick:
		}
		for {
			f.mu.Lock()
			after := f.last
			f.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			changes, err := f.hub.store.ChangesSince(ctx, f.tenant, after, fetchBatch)
			cancel()
			if err != nil {
				f.hub.log.Warn("watch: read change log", "tenant", f.tenant, "err", err)
				break
			}
			if len(changes) == 0 {
				break
			}
			f.append(changes)
			if len(changes) < fetchBatch {
				break
			}
		}
	}
}

func (f *feed) append(changes []store.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range changes {
		if c.ResourceVersion <= f.last {
			continue
		}
		f.ring = append(f.ring, c)
		f.last = c.ResourceVersion
	}
	if over := len(f.ring) - ringSize; over > 0 {
		f.base = f.ring[over-1].ResourceVersion
		f.ring = append(f.ring[:0:0], f.ring[over:]...)
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// since returns ring entries newer than cursor. inRing is false when the ring
// no longer reaches back to cursor, so the caller must read the store.
func (f *feed) since(cursor int64) (out []store.Change, wait <-chan struct{}, inRing bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cursor >= f.last {
		return nil, f.changed, true
	}
	if cursor < f.base {
		return nil, f.changed, false
	}
	// Binary search for the first entry newer than cursor.
	lo, hi := 0, len(f.ring)
	for lo < hi {
		m := (lo + hi) / 2
		if f.ring[m].ResourceVersion <= cursor {
			lo = m + 1
		} else {
			hi = m
		}
	}
	out = make([]store.Change, len(f.ring)-lo)
	copy(out, f.ring[lo:])
	return out, f.changed, true
}

// Watch streams changes of tenant matching sel, newer than from (or newer
// than now when from is empty), to send until ctx ends or send fails. It
// first sends a BOOKMARK with the version it starts from. A resume point
// older than retained history answers store.ErrGone before anything is sent.
func (h *Hub) Watch(ctx context.Context, tenant string, sel *resource.Selector, from string, send func(api.WatchEvent) error) error {
	f, err := h.feedFor(ctx, tenant)
	if err != nil {
		return err
	}
	var cursor int64
	if from == "" {
		f.mu.Lock()
		cursor = f.last
		f.mu.Unlock()
	} else {
		cursor, err = strconv.ParseInt(from, 10, 64)
		if err != nil || cursor < 0 {
			return fmt.Errorf("%w: resourceVersion %q is not one this server issued", errBadVersion, from)
		}
		// Fail early, before the stream starts, when the point is gone.
		if _, inRing := peek(f, cursor); !inRing {
			if _, err := h.store.ChangesSince(ctx, tenant, cursor, 1); err != nil {
				return err
			}
		}
	}
	if err := send(bookmark(cursor)); err != nil {
		return err
	}
	for {
		changes, wait, inRing := f.since(cursor)
		if !inRing {
			changes, err = h.store.ChangesSince(ctx, tenant, cursor, fetchBatch)
			if err != nil {
				return err
			}
		}
		for _, c := range changes {
			cursor = c.ResourceVersion
			if !sel.Matches(c.Object) {
				continue
			}
			if err := send(api.WatchEvent{Type: c.Type, Object: c.Object}); err != nil {
				return err
			}
		}
		if len(changes) > 0 {
			continue
		}
		if wait == nil {
			return errors.New("watch hub is closed")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait:
		}
	}
}

func peek(f *feed, cursor int64) ([]store.Change, bool) {
	out, _, inRing := f.since(cursor)
	return out, inRing
}

func bookmark(rv int64) api.WatchEvent {
	return api.WatchEvent{Type: api.EventBookmark, Object: &resource.Object{Metadata: resource.ObjectMeta{ResourceVersion: strconv.FormatInt(rv, 10)}}}
}

// errBadVersion marks a resourceVersion the server cannot parse.
var errBadVersion = errors.New("invalid resourceVersion")

// IsBadVersion reports whether err is a malformed resume point.
func IsBadVersion(err error) bool { return errors.Is(err, errBadVersion) }

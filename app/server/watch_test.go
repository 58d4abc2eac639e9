package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	} `json:"object"`
}

// openWatchAs starts a watch stream with key and returns its events.
func openWatchAs(t *testing.T, b *bundle, key, query string) <-chan watchEvent {
	t.Helper()
	as := *b
	as.key = key
	ch, res := openWatch(t, &as, query)
	require.Equal(t, http.StatusOK, res.StatusCode)
	return ch
}

// openWatch starts a watch stream and returns its events.
func openWatch(t *testing.T, b *bundle, query string) (<-chan watchEvent, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/resources?watch=true&"+query, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	out := make(chan watchEvent, 64)
	if res.StatusCode != http.StatusOK {
		close(out)
		return out, res
	}
	require.Equal(t, "application/x-ndjson", res.Header.Get("Content-Type"))
	go func() {
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev watchEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				out <- ev
			}
		}
	}()
	return out, res
}

// next returns the next event that is not a bookmark.
func next(t *testing.T, ch <-chan watchEvent) watchEvent {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "watch stream ended")
			if ev.Type != "BOOKMARK" {
				return ev
			}
		case <-timeout:
			t.Fatal("no watch event within 30s")
		}
	}
}

func TestWatchStreamsAndResumes(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mk(t))
			ch, _ := openWatch(t, b, "selector=kind%3DTool")
			first := <-ch
			require.Equal(t, "BOOKMARK", first.Type)

			require.Equal(t, http.StatusOK, b.apply(t, fmt.Sprintf(toolDoc, "watch.one")).status)
			ev := next(t, ch)
			require.Equal(t, "ADDED", ev.Type)
			require.Equal(t, "watch.one", ev.Object.Metadata.Name)
			resumeFrom := ev.Object.Metadata.ResourceVersion

			require.Equal(t, http.StatusOK, b.do(t, http.MethodPatch, "/v1/namespaces/default/tools/watch.one", "application/merge-patch+json", []byte(`{"spec":{"description":"changed"}}`)).status)
			require.Equal(t, "MODIFIED", next(t, ch).Type)
			require.Equal(t, http.StatusOK, b.do(t, http.MethodDelete, "/v1/namespaces/default/tools/watch.one", "", nil).status)
			require.Equal(t, "DELETED", next(t, ch).Type)

			// Resume from the first event: the rest is replayed in order,
			// and the selector keeps other kinds out.
			require.Equal(t, http.StatusOK, b.apply(t, "apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata:\n  name: m1\nspec:\n  provider: openai\n  model: gpt-4o-mini\n").status)
			resumed, _ := openWatch(t, b, "selector=kind%3DTool&resourceVersion="+resumeFrom)
			require.Equal(t, "MODIFIED", next(t, resumed).Type)
			require.Equal(t, "DELETED", next(t, resumed).Type)

			// The WATCH method works too.
			req, err := http.NewRequest("WATCH", b.url+"/v1/resources?resourceVersion="+resumeFrom, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+b.key)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode)
			res.Body.Close()

			// A point older than retained history answers 410 Gone.
			require.NoError(t, b.store.ChangesCompact(context.Background(), server.LocalTenant, 1))
			_, gone := openWatch(t, b, "resourceVersion=1")
			require.Equal(t, http.StatusGone, gone.StatusCode)

			// Malformed resume point.
			_, bad := openWatch(t, b, "resourceVersion=abc")
			require.Equal(t, http.StatusBadRequest, bad.StatusCode)
		})
	}
}

// versionGate holds the watch hub's read of where a stream starts until the
// test releases it.
type versionGate struct {
	store.Store
	armed            atomic.Bool
	entered, release chan struct{}
}

func (g *versionGate) View(ctx context.Context, tenant string, fn func(context.Context, store.Reader) error) error {
	return g.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		return fn(ctx, gatedReader{Reader: r, g: g})
	})
}

type gatedReader struct {
	store.Reader
	g *versionGate
}

func (r gatedReader) CurrentVersion(ctx context.Context) (int64, error) {
	if r.g.armed.CompareAndSwap(true, false) {
		close(r.g.entered)
		<-r.g.release
	}
	return r.Reader.CurrentVersion(ctx)
}

// TestWatchStartsAtItsFirstBookmark: a slow start must not let an idle
// BOOKMARK out first, or a client that waits for the first BOOKMARK before
// it writes would lose its own change.
func TestWatchStartsAtItsFirstBookmark(t *testing.T) {
	t.Parallel()
	gate := &versionGate{entered: make(chan struct{}), release: make(chan struct{})}
	b := setupWith(t, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), func(c *server.Config) {
		gate.Store = c.Store
		c.Store = gate
		c.BookmarkInterval = time.Millisecond
	})
	gate.armed.Store(true)
	ch, _ := openWatch(t, b, "selector=kind%3DTool")
	<-gate.entered
	// Committed before the stream's start point is read: not in the stream,
	// and the first BOOKMARK must say so.
	require.Equal(t, http.StatusOK, b.apply(t, fmt.Sprintf(toolDoc, "watch.before")).status)
	var before int64
	require.NoError(t, b.store.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
		var err error
		before, err = r.CurrentVersion(ctx)
		return err
	}))
	close(gate.release)

	first := <-ch
	require.Equal(t, "BOOKMARK", first.Type)
	start, err := strconv.ParseInt(first.Object.Metadata.ResourceVersion, 10, 64)
	require.NoError(t, err, "the first BOOKMARK names where the stream starts")
	require.Equal(t, before, start)

	require.Equal(t, http.StatusOK, b.apply(t, fmt.Sprintf(toolDoc, "watch.after")).status)
	ev := next(t, ch)
	require.Equal(t, "ADDED", ev.Type)
	require.Equal(t, "watch.after", ev.Object.Metadata.Name)
}

func TestValidateAndDiffWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	var before int64
	readVersion := func() int64 {
		var v int64
		require.NoError(t, b.store.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
			var err error
			v, err = r.CurrentVersion(ctx)
			return err
		}))
		return v
	}
	before = readVersion()
	r := b.do(t, http.MethodPost, "/v1/resources/validate", "application/yaml", []byte(fleet(t)))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, true, r.json(t)["valid"])
	require.Equal(t, before, readVersion(), "validate must not write")

	r = b.do(t, http.MethodPost, "/v1/resources/diff", "application/yaml", []byte(fleet(t)))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	for _, it := range r.json(t)["items"].([]any) {
		item := it.(map[string]any)
		want := "create"
		if item["kind"] == "Environment" {
			want = "unchanged" // bootstrap created dev, staging and prod
		}
		require.Equal(t, want, item["action"], "%v", item)
	}
	require.Equal(t, http.StatusOK, b.apply(t, fleet(t)).status)
	r = b.do(t, http.MethodPost, "/v1/resources/diff", "application/yaml", []byte(fmt.Sprintf(toolDoc, "zendesk.search_tickets")))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	item := r.json(t)["items"].([]any)[0].(map[string]any)
	require.Equal(t, "update", item["action"])
	require.NotEmpty(t, item["changes"])
}

package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

// fakeClock is a clock tests move by hand, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Two replicas (two servers, each with its own connection pool) on one
// Postgres database, whose signing key falls due on both at once, round
// after round: each round rotates once, exactly one key is active after
// it, and every token either replica issued verifies on both.
func TestReplicasRotateSigningKeysOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	clock := &fakeClock{t: time.Now()}
	keyring := newKeyring(t)
	var replicas []*server.Server
	var st store.Store
	for range 2 {
		s, err := backend.Open(ctx, url, backend.Options{Now: clock.now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		srv, err := newServer(s, keyring, clock.now)
		require.NoError(t, err)
		replicas = append(replicas, srv)
		st = s
	}
	keys := func() (all, active int) {
		t.Helper()
		list, err := st.SigningKeyList(ctx)
		require.NoError(t, err)
		for _, k := range list {
			if k.RetiredAt == nil {
				active++
			}
		}
		return len(list), active
	}
	total, active := keys()
	require.Equal(t, 1, total, "the second replica found the first one's key")
	require.Equal(t, 1, active)

	for round := range 5 {
		clock.add(25 * time.Hour) // past the key's maximum age (24 h)
		var wg sync.WaitGroup
		for _, r := range replicas {
			wg.Go(func() { assert.NoError(t, r.RotateSigningKeys(ctx)) })
		}
		wg.Wait()
		// Keys retired more than the verify window ago no longer list.
		all, active := keys()
		require.Equal(t, 1, active, "round %d", round)
		require.Equal(t, 2, all, "round %d: one new key, the one before still verifying", round)
		var tokens []string
		for _, r := range replicas {
			tokens = append(tokens, issue(t, r))
		}
		for _, r := range replicas {
			for _, tok := range tokens {
				require.NoError(t, verify(r, tok, clock.now), "round %d", round)
			}
		}
	}
}

package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

func TestNewUID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		u := store.NewUID()
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, u)
		require.False(t, seen[u])
		seen[u] = true
	}
}

func TestPrepareUpdate(t *testing.T) {
	t.Parallel()
	stored, err := store.PrepareCreate(&resource.Object{
		Kind: "Agent", Metadata: resource.ObjectMeta{Name: "a", Labels: map[string]string{}},
		Spec: map[string]any{"x": 1}, Status: map[string]any{"phase": "Ready"},
	}, 4, time.Unix(0, 0))
	require.NoError(t, err)
	require.Nil(t, stored.Metadata.Labels, "empty maps are normalized")
	tests := []struct {
		name       string
		obj        resource.Object
		changed    bool
		generation int64
		err        error
	}{
		{"no-op with int vs float", resource.Object{Kind: "Agent", Metadata: resource.ObjectMeta{Name: "a"}, Spec: map[string]any{"x": 1.0}}, false, 1, nil},
		{"empty labels are absent", resource.Object{Kind: "Agent", Metadata: resource.ObjectMeta{Name: "a", Labels: map[string]string{}}, Spec: map[string]any{"x": 1}}, false, 1, nil},
		{"spec change", resource.Object{Kind: "Agent", Metadata: resource.ObjectMeta{Name: "a"}, Spec: map[string]any{"x": 2}}, true, 2, nil},
		{"label change", resource.Object{Kind: "Agent", Metadata: resource.ObjectMeta{Name: "a", Labels: map[string]string{"a": "b"}}, Spec: map[string]any{"x": 1}}, true, 1, nil},
		{"stale", resource.Object{Kind: "Agent", Metadata: resource.ObjectMeta{Name: "a", ResourceVersion: "3"}, Spec: map[string]any{"x": 2}}, false, 0, store.ErrConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, changed, err := store.PrepareUpdate(stored, &tc.obj)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.changed, changed)
			require.Equal(t, tc.generation, out.Metadata.Generation)
			require.Equal(t, "Ready", out.Status["phase"])
		})
	}
}

func TestPageLimit(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{-1: 100, 0: 100, 1: 1, 1000: 1000, 1001: 1000} {
		require.Equal(t, want, store.PageLimit(in), "limit %d", in)
	}
}

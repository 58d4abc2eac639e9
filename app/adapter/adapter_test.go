package adapter

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

func manifest(name string) *resource.Object {
	return &resource.Object{
		APIVersion: resource.InternalGroupVersion, Kind: resource.KindCompiledAgentManifest,
		Metadata: resource.ObjectMeta{Name: name, Namespace: "default"},
		Spec:     map[string]any{"systemPromptSecret": "do-not-log"},
	}
}

type failing struct{}

func (failing) Name() string { return "failing" }
func (failing) HandOver(context.Context, *resource.Object) error {
	return errors.New("boom")
}

func TestLocalRecordsAndLogs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLocalWithClock(slog.New(slog.NewJSONHandler(&buf, nil)), func() time.Time { return at })
	r := NewRegistry(l)
	require.Equal(t, []string{"local"}, r.Names())

	require.NoError(t, r.HandOver(context.Background(), manifest("support-bot-g1")))
	require.NoError(t, r.HandOverTo(context.Background(), "local", manifest("support-bot-g2")))
	require.Equal(t, []HandOverRecord{
		{Namespace: "default", Manifest: "support-bot-g1", At: at},
		{Namespace: "default", Manifest: "support-bot-g2", At: at},
	}, l.HandOvers())
	require.Contains(t, buf.String(), "support-bot-g2")
	require.NotContains(t, buf.String(), "do-not-log")
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		run     func(r *Registry) error
		wantErr string
	}{
		{"unknown adapter", func(r *Registry) error { return r.HandOverTo(context.Background(), "k8s", manifest("a-g1")) }, "unknown runtime adapter"},
		{"errors joined with adapter name", func(r *Registry) error { return r.HandOver(context.Background(), manifest("a-g1")) }, "adapter failing: boom"},
		{"not a manifest", func(r *Registry) error {
			return r.HandOverTo(context.Background(), "local", &resource.Object{Kind: resource.KindAgent})
		}, "expected a CompiledAgentManifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewRegistry(NewLocal(nil), failing{})
			require.ErrorContains(t, tt.run(r), tt.wantErr)
		})
	}
}

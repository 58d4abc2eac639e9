package trace_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/trace"
)

// TestRetention expires spans per tenant: the default for one tenant, an
// override for another.
func TestRetention(t *testing.T) {
	t.Parallel()
	short, long := newTenant(), newTenant()
	h := newHarness(t, openSQLite(t), func(c *trace.Config) {
		c.Retention = time.Hour
		c.TenantRetention = map[string]time.Duration{long: 48 * time.Hour}
	})
	old := func() *tracepb.Span {
		sp := otlpSpan(newID(), "old", str("warden.tool", "crm.get"))
		sp.StartTimeUnixNano -= uint64(2 * time.Hour)
		sp.EndTimeUnixNano -= uint64(2 * time.Hour)
		return sp
	}
	for _, tenant := range []string{short, long} {
		key := apiKey(t, h.st, tenant, "sender", "default", "editor", "")
		resp, body := h.post(t, key, "/v1/traces", "application/x-protobuf", bytes.NewReader(marshal(t, request(old(), otlpSpan(newID(), "new")))), nil)
		require.Equal(t, 200, resp.StatusCode, body)
	}
	require.NoError(t, h.svc.Expire(context.Background()))
	require.Equal(t, 1, spanCount(t, h.st, short), "the two-hour-old span is past the one-hour default")
	require.Equal(t, 2, spanCount(t, h.st, long), "the override keeps it")

	_, err := trace.New(trace.Config{Store: h.st, Ingest: fakeAuth{}, Query: fakeAuth{}, Authz: nil})
	require.ErrorContains(t, err, "Authz is required")
	_, err = trace.New(trace.Config{Store: h.st, Ingest: fakeAuth{}, Query: fakeAuth{}, Authz: allowAll{}, TenantRetention: map[string]time.Duration{"x": 0}})
	require.ErrorContains(t, err, `TenantRetention["x"] must be positive`)
}

type fakeAuth struct{}

func (fakeAuth) Authenticate(context.Context, string) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrUnauthenticated
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, auth.Principal, string, string, string) error { return nil }

package trace_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/trace"
)

// TestConfigValidate names the missing dependency.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := trace.New(trace.Config{Store: openSQLite(t), Ingest: fakeAuth{}, Query: fakeAuth{}, Authz: nil})
	require.ErrorContains(t, err, "Authz is required")
	svc, err := trace.New(trace.Config{Store: openSQLite(t), Ingest: fakeAuth{}, Query: fakeAuth{}, Authz: allowAll{}})
	require.NoError(t, err)
	svc.Close()
	svc.Close()
}

type fakeAuth struct{}

func (fakeAuth) Authenticate(context.Context, string) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrUnauthenticated
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, auth.Principal, string, string, string) error { return nil }

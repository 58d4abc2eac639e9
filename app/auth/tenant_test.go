package auth

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRequestedTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	require.Empty(t, RequestedTenant(ctx))
	require.Equal(t, ctx, WithRequestedTenant(ctx, ""), "no tenant asked for: ctx unchanged")
	require.Equal(t, "acme", RequestedTenant(WithRequestedTenant(ctx, "acme")))
}

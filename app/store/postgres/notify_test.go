package postgres

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNotifyPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tenant  string
		config  bool
		payload string
	}{
		{"records only", "acme", false, "acme"},
		{"configuration", "acme", true, "c:acme"},
		{"tenant with a colon, records only", "c:acme", false, "r:c:acme"},
		{"tenant with a colon, configuration", "r:acme", true, "c:r:acme"},
		{"tenant named like a prefix", "c", false, "c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.payload, notifyPayload(tc.tenant, tc.config))
			tenant, config := parseNotifyPayload(tc.payload)
			require.Equal(t, tc.tenant, tenant)
			require.Equal(t, tc.config, config)
		})
	}
}

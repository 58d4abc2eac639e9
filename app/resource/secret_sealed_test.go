package resource_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

// TestRedactSecretHidesSealedValues checks that the envelope-encrypted form
// of a Secret never leaves the server either: readers see only key names.
func TestRedactSecretHidesSealedValues(t *testing.T) {
	t.Parallel()
	o := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindSecret,
		Metadata: resource.ObjectMeta{Name: "stripe", Namespace: "default"},
		Spec:     map[string]any{"sealed": map[string]any{"apiKey": "v1.abcdef", "webhook": "v1.123"}}}
	require.Empty(t, resource.Validate(o))
	r := resource.RedactSecret(o)
	require.NotContains(t, r.Spec, "sealed")
	require.NotContains(t, r.Spec, "data")
	require.Equal(t, []any{"apiKey", "webhook"}, r.Spec["keys"])
	require.Contains(t, o.Spec, "sealed", "the stored object is not changed")
}

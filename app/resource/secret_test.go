package resource

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactSecret(t *testing.T) {
	t.Parallel()
	s := obj(KindSecret, "s", map[string]any{"type": "opaque", "data": map[string]any{"b": "2", "a": "1"}})
	r := RedactSecret(s)
	require.Equal(t, map[string]any{"type": "opaque", "keys": []any{"a", "b"}}, r.Spec)
	require.Contains(t, s.Spec, "data", "the original is not modified")

	again := RedactSecret(r)
	require.Equal(t, r, again, "redacting twice changes nothing")

	empty := RedactSecret(obj(KindSecret, "s", map[string]any{"data": map[string]any{}}))
	require.Equal(t, map[string]any{"keys": []any{}}, empty.Spec)

	m := obj(KindModel, "m", map[string]any{"data": "kept"})
	require.Equal(t, m, RedactSecret(m))
	require.Nil(t, RedactSecret(nil))
}

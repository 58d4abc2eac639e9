package workload

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestTokenCacheOwnsItsKeys verifies a token whose bytes belong to a
// buffer the caller reuses afterwards, as a Fiber handler's header value
// does: the cache must still know the token, and must not know whatever
// the buffer holds next.
func TestTokenCacheOwnsItsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.issue(t, params)
	buf := []byte(tok)
	borrowed := unsafe.String(&buf[0], len(buf))
	_, err := b.verify.Verify(t.Context(), borrowed)
	require.NoError(t, err)
	for i := range buf { // the buffer is reused for another request
		buf[i] = 'x'
	}
	require.True(t, b.verify.cache.has(tok), "the verified token is still cached")
	require.False(t, b.verify.cache.has(string(buf)), "the buffer's next content is not")
}

package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunSoak runs the soak briefly on SQLite: every call is made and
// succeeds, a sample follows each period and the end of the run, and the
// tables that hold the calls are measured and listed.
func TestRunSoak(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	samples, err := RunSoak(context.Background(), SoakOptions{Rate: 50, Duration: time.Second, Every: 400 * time.Millisecond, Retention: time.Hour}, &out)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(samples), 2, out.String())
	last := samples[len(samples)-1]
	require.Equal(t, int64(50), last.Calls, out.String())
	require.Zero(t, last.Errors, out.String())
	require.Positive(t, last.Size.Bytes)
	require.Positive(t, last.Size.Tables["resources"], "%v", last.Size.Tables)
	require.Positive(t, last.Size.Tables["changes"], "%v", last.Size.Tables)
	for _, s := range []string{"store MB", "used MB", "bytes/call", "resources"} {
		require.Contains(t, out.String(), s)
	}
}

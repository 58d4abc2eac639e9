package jobs

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRiverLogsWarningsOnly checks that River's routine information stays
// out of the log while its warnings and errors, with their attributes and
// groups, reach it.
func TestRiverLogsWarningsOnly(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	river := Config{Logger: base}.WithDefaults().riverConfig().Logger.With("client", "c1").WithGroup("g")

	river.Info("producer: Producer job counts")
	river.Debug("fetch")
	require.Empty(t, buf.String())
	require.False(t, river.Enabled(context.Background(), slog.LevelInfo))

	river.Warn("job stuck", "id", 7)
	river.Error("fetch failed")
	require.Contains(t, buf.String(), `level=WARN msg="job stuck" client=c1 g.id=7`)
	require.Contains(t, buf.String(), `level=ERROR msg="fetch failed" client=c1`)
}

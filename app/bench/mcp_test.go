package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunMCPShared runs the benchmark briefly in one process on SQLite:
// every phase makes calls and none fails.
func TestRunMCPShared(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	results, err := RunMCP(context.Background(), MCPOptions{Layout: MCPLayoutShared,
		Options: Options{Rate: 100, Duration: 300 * time.Millisecond, Concurrency: 4, Rules: 3}}, &out)
	require.NoError(t, err)
	require.Len(t, results, 4)
	for _, r := range results {
		require.Positive(t, r.Calls, r.Name)
		require.Zero(t, r.Errors, r.Name)
		require.LessOrEqual(t, r.P50, r.P99, r.Name)
	}
	for _, s := range []string{"gateway, saturation", "added latency at 100 calls/s", "gateway CPU per call at saturation", "share this process"} {
		require.Contains(t, out.String(), s)
	}
}

// The serving process of the split layout announces endpoints a client
// can call (the echo server directly, the gateway as the agent) and
// answers its CPU time, growing with the calls it served.
func TestServeMCP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeMCP(ctx, MCPServeOptions{Store: "sqlite://" + filepath.Join(t.TempDir(), "w.db"), Rules: 3}, inR, outW)
		_ = outW.Close()
	}()
	out := bufio.NewReader(outR)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	var ends mcpEndpoints
	require.NoError(t, json.Unmarshal([]byte(line), &ends))
	require.Positive(t, ends.Procs)
	ask := func(cmd string) string {
		_, err := fmt.Fprintln(inW, cmd)
		require.NoError(t, err)
		a, err := out.ReadString('\n')
		require.NoError(t, err)
		return strings.TrimSpace(a)
	}
	cpu := func() time.Duration {
		n, err := strconv.ParseInt(ask("cpu"), 10, 64)
		require.NoError(t, err)
		return time.Duration(n)
	}

	before := cpu()
	var seq atomic.Int64
	hc := &http.Client{}
	direct, err := connectMCP(ctx, ends.Echo, hc)
	require.NoError(t, err)
	defer func() { _ = direct.Close() }()
	viaGW, err := connectMCP(ctx, ends.MCP, &http.Client{Transport: bearer{ends.Token, http.DefaultTransport}})
	require.NoError(t, err)
	defer func() { _ = viaGW.Close() }()
	for _, c := range []*leanClient{
		{hc: hc, url: direct.endpoint, sid: direct.ID(), version: direct.InitializeResult().ProtocolVersion, seq: &seq},
		{hc: hc, url: viaGW.endpoint, sid: viaGW.ID(), version: viaGW.InitializeResult().ProtocolVersion, seq: &seq, token: ends.Token},
	} {
		name := "echo"
		if c.token != "" {
			name = "echo.echo"
		}
		for range 20 {
			require.NoError(t, c.call(ctx, name))
		}
	}
	require.Greater(t, cpu(), before, "serving calls costs the process CPU time")

	require.Equal(t, "ok", ask("profile "+filepath.Join(t.TempDir(), "cpu.prof")))
	require.Equal(t, "ok", ask("stop"))
	require.True(t, strings.HasPrefix(ask("nonsense"), "error: "))
	require.NoError(t, inW.Close())
	require.NoError(t, <-done)
}

package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunGateway runs the benchmark briefly on SQLite: every phase makes
// calls, none fails (a governed call counts only when its record is
// Succeeded), and the table carries the figures the docs quote.
func TestRunGateway(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	results, err := RunGateway(context.Background(), Options{Rate: 100, Duration: 300 * time.Millisecond, Concurrency: 4, Rules: 3}, &out)
	require.NoError(t, err)
	require.Len(t, results, 4)
	for _, r := range results {
		require.Positive(t, r.Calls, r.Name)
		require.Zero(t, r.Errors, r.Name)
		require.Positive(t, r.CPUPerCall(), r.Name)
		require.LessOrEqual(t, r.P50, r.P99, r.Name)
	}
	for _, s := range []string{"gateway, saturation", "cpu/call", "added latency at 100 calls/s", "gateway CPU per call at saturation"} {
		require.Contains(t, out.String(), s)
	}
}

// With Steps, the table of the fixed-rate phase's spans follows: the root
// span and every step of a REST call, each once per governed call of that
// phase (and none of the saturation phase's).
func TestRunGatewaySteps(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	results, err := RunGateway(context.Background(), Options{Rate: 100, Duration: 300 * time.Millisecond, Concurrency: 4, Rules: 3, Steps: true}, &out)
	require.NoError(t, err)
	_, table, ok := strings.Cut(out.String(), `steps of "gateway, fixed rate"`)
	require.True(t, ok, out.String())
	calls := strconv.Itoa(results[1].Calls)
	for _, span := range []string{"warden.toolcall", "1.resolve", "2.authenticate", "3.classify", "4.policy", "5.record", "6.trace", "7.invoke", "8.result", "9.output", "9.record"} {
		var line string
		for l := range strings.Lines(table) {
			if strings.HasPrefix(l, span+" ") {
				line = l
			}
		}
		require.NotEmpty(t, line, "span %s in\n%s", span, table)
		require.Equal(t, calls, strings.Fields(line)[1], "span %s counts the fixed-rate phase's calls", span)
	}
}

// FixedRateOnly runs the two fixed-rate phases alone, and Trace writes an
// execution trace of the governed one.
func TestRunGatewayFixedRateOnlyWithTrace(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "gateway.trace")
	results, err := RunGateway(context.Background(), Options{Rate: 100, Duration: 200 * time.Millisecond, Rules: 1, FixedRateOnly: true, Trace: path}, &out)
	require.NoError(t, err)
	require.Len(t, results, 2)
	require.Equal(t, "gateway, fixed rate", results[1].Name)
	require.Contains(t, out.String(), "added latency at 100 calls/s")
	require.NotContains(t, out.String(), "saturation")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("go 1.")), "an execution trace starts with its version header, got %.20q", b)
}

// A governed call answered 200 with a Failed record is an error: the
// benchmark must not count calls that never reached the tool.
func TestPostCountsOnlySucceededCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, token, body string
		ok                bool
	}{
		{"succeeded", "tok", `{"status":{"phase":"Succeeded"}}`, true},
		{"failed", "tok", `{"status":{"phase":"Failed","output":{"error":{"code":"ToolFailed"}}}}`, false},
		{"not json", "tok", `oops`, false},
		{"direct call, any body", "", `{"ok":true}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			err := post(context.Background(), srv.Client(), srv.URL, tc.token, `{}`)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

// A store used before is refused: its records would mix with the
// benchmark's, and its tools point elsewhere.
func TestRunGatewayRefusesAUsedStore(t *testing.T) {
	t.Parallel()
	store := "sqlite://" + filepath.Join(t.TempDir(), "warden.db")
	o := Options{Store: store, Rate: 50, Duration: 50 * time.Millisecond, Concurrency: 2, Rules: 1}
	_, err := RunGateway(context.Background(), o, io.Discard)
	require.NoError(t, err)
	_, err = RunGateway(context.Background(), o, io.Discard)
	require.ErrorContains(t, err, "fresh database of its own")
}

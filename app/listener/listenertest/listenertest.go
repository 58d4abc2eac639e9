// Package listenertest checks, in tests, that a listener recovers from a
// panic as app/listener promises: the caller gets a 500 (codes.Internal on
// gRPC) naming a request id, the log has the panic's stack under that id,
// and the listener goes on serving.
package listenertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/warden-dev/warden/app/listener"
)

// RequirePanicRecovered sends panicking, a request whose handler panics,
// and requires a 500 whose X-Request-Id header the body and log name, with
// the panic's stack logged; then it sends next and requires an answer
// below 500: the listener still serves. log is what the listener logged.
func RequirePanicRecovered(t testing.TB, panicking, next func() *http.Request, log fmt.Stringer) {
	t.Helper()
	res, err := http.DefaultClient.Do(panicking())
	require.NoError(t, err, "the panicking request gets an answer, not a reset connection")
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, res.StatusCode, string(body))
	id := res.Header.Get(listener.HeaderRequestID)
	require.NotEmpty(t, id, "the 500 names its request id in %s", listener.HeaderRequestID)
	require.Contains(t, string(body), id, "the 500's body names the request id")
	requireLogged(t, log, id)

	res, err = http.DefaultClient.Do(next())
	require.NoError(t, err, "the listener still serves after a panic")
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	require.Less(t, res.StatusCode, http.StatusInternalServerError, "the listener still serves after a panic")
}

// RequireGRPCPanicRecovered is RequirePanicRecovered for a gRPC listener:
// panicking makes a call whose handler panics, with opts (which capture
// the response header); next a call that must not fail with
// codes.Internal or codes.Unavailable.
func RequireGRPCPanicRecovered(t testing.TB, panicking func(ctx context.Context, opts ...grpc.CallOption) error,
	next func(ctx context.Context) error, log fmt.Stringer) {
	t.Helper()
	var header metadata.MD
	err := panicking(context.Background(), grpc.Header(&header))
	require.Error(t, err)
	st := status.Convert(err)
	require.Equal(t, codes.Internal, st.Code(), st.Message())
	ids := header.Get("x-request-id")
	require.Len(t, ids, 1, "the call's response header names its request id")
	require.Contains(t, st.Message(), ids[0], "the Internal status names the request id")
	requireLogged(t, log, ids[0])

	err = next(context.Background())
	code := status.Code(err)
	require.NotContains(t, []codes.Code{codes.Internal, codes.Unavailable}, code, "the listener still serves after a panic: %v", err)
}

// requireLogged requires one log line with the request id and a stack.
func requireLogged(t testing.TB, log fmt.Stringer, id string) {
	t.Helper()
	for line := range strings.SplitSeq(log.String(), "\n") {
		if strings.Contains(line, "panic in handler") && strings.Contains(line, id) {
			require.Contains(t, line, "goroutine", "the log has the panic's stack")
			return
		}
	}
	t.Fatalf("no log line names the panic of request %s:\n%s", id, log)
}

package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stepsOf returns status.steps of a record as names and durations; an
// entry without durationMs (an open wait) has duration -1.
func stepsOf(t *testing.T, r resp) (names []string, ms []float64) {
	t.Helper()
	st, _ := r.body["status"].(map[string]any)
	list, ok := st["steps"].([]any)
	require.True(t, ok, "status.steps missing: %s", r.raw)
	for _, e := range list {
		m := e.(map[string]any)
		names = append(names, m["name"].(string))
		d, ok := m["durationMs"].(float64)
		if !ok {
			require.NotEmpty(t, m["startedAt"], "an entry with neither durationMs nor startedAt: %v", m)
			d = -1
		}
		require.GreaterOrEqual(t, d, -1.0)
		ms = append(ms, d)
	}
	return names, ms
}

func sum(ms []float64) float64 {
	var s float64
	for _, d := range ms {
		s += d
	}
	return s
}

// TestStepTimings: a governed call's record lists its nine steps with
// their durations, which add up to no more than the caller waited; a
// paused call lists the wait for its approver, from the record write to
// the decision, in place of steps 5 and 6; a call the policy denies lists
// the steps it passed.
func TestStepTimings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	nine := []string{"1.resolve", "2.authenticate", "3.classify", "4.policy", "5.record", "6.trace", "7.invoke", "8.result", "9.output"}

	t.Run("governed call", func(t *testing.T) {
		begin := time.Now()
		r := e.call("tickets.create", map[string]any{"title": "steps"}, nil)
		waited := float64(time.Since(begin)) / float64(time.Millisecond)
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		names, ms := stepsOf(t, r)
		require.Equal(t, nine, names)
		require.Positive(t, ms[6], "7.invoke took no time: %v", ms)
		require.LessOrEqual(t, sum(ms), waited)
		// The stored record says the same as the answer.
		stored := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls/"+r.name(), nil)
		storedNames, storedMS := stepsOf(t, stored)
		require.Equal(t, names, storedNames)
		require.Equal(t, ms, storedMS)
	})

	t.Run("policy denial", func(t *testing.T) {
		r := e.call("tickets.create", map[string]any{"title": "forbidden"}, nil)
		require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
		rec := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls/"+r.header.Get("Warden-Tool-Call"), nil)
		require.Equal(t, http.StatusOK, rec.status, string(rec.raw))
		names, _ := stepsOf(t, rec)
		require.Equal(t, nine[:4], names)
	})

	for _, tc := range []struct {
		decision, phase string
		after           []string
	}{
		{"approve", "Succeeded", []string{"7.invoke", "8.result", "9.output"}},
		{"deny", "Denied", nil},
	} {
		t.Run("paused then "+tc.decision, func(t *testing.T) {
			r := e.pending(map[string]float64{"approve": 70, "deny": 71}[tc.decision])
			paused := time.Now()
			names, ms := stepsOf(t, r)
			require.Equal(t, append(append([]string{}, nine[:4]...), "approval"), names)
			require.Equal(t, -1.0, ms[4], "the wait is open while the call awaits approval")

			decided := time.Now()
			d := e.cp(http.MethodPost, "/v1/approvals/"+approvalOf(r.name())+"/decide", map[string]any{"decision": tc.decision})
			require.Equal(t, http.StatusOK, d.status, string(d.raw))
			if tc.decision == "approve" {
				e.wait(r.name())
			}
			done := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls/"+r.name(), nil)
			require.Equal(t, tc.phase, done.phase(), string(done.raw))
			names, ms = stepsOf(t, done)
			require.Equal(t, append(append(append([]string{}, nine[:4]...), "approval"), tc.after...), names)
			// The wait began at the record write, before the 202, and
			// ended after the decision was asked for.
			require.GreaterOrEqual(t, ms[4], float64(decided.Sub(paused))/float64(time.Millisecond))
		})
	}
}

package gateway

import (
	"math"
	"time"
)

// The timed parts of a call, in the order status.steps lists them: the
// nine steps, with a paused call's wait for its approver between the
// policy and the invocation.
const (
	stepResolve = iota
	stepAuthenticate
	stepClassify
	stepPolicy
	stepRecord
	stepTrace
	stepApproval
	stepInvoke
	stepResult
	stepOutput
	numSteps
)

// stepNames are the names status.steps gives the timed parts; the nine
// steps are named as their trace spans are.
var stepNames = [numSteps]string{"1.resolve", "2.authenticate", "3.classify", "4.policy", "5.record", "6.trace",
	"approval", "7.invoke", "8.result", "9.output"}

// stepNameValues are stepNames as the values of status.steps entries,
// converted to interface values once rather than on every call.
var stepNameValues = func() (v [numSteps]any) {
	for i, n := range stepNames {
		v[i] = n
	}
	return v
}()

// StepApproval is the name of a paused call's wait for its approver in
// status.steps.
const StepApproval = "approval"

// stepTimes are the durations of a call's steps. It is a fixed array, so
// timing a step allocates nothing; each step costs one monotonic clock
// read (lap), the previous read being the step's start.
type stepTimes struct {
	d    [numSteps]time.Duration
	ran  uint16
	last time.Time
	// waitFrom is when a paused call's wait for approval started (the
	// record write), on the wall clock: the wait ends in another request,
	// possibly in another process. Zero when the call never paused or
	// its wait is over (d[stepApproval] then holds it).
	waitFrom time.Time
}

// begin starts the clock of the next step.
func (t *stepTimes) begin() { t.last = time.Now() }

// lap ends step i, which started at the previous read.
func (t *stepTimes) lap(i int) {
	now := time.Now()
	t.d[i] += now.Sub(t.last)
	t.last = now
	t.ran |= 1 << i
}

// pause opens the approval wait at the wall-clock time at.
func (t *stepTimes) pause(at time.Time) {
	t.waitFrom = at
	t.ran |= 1 << stepApproval
}

// status is status.steps: one {name, durationMs} per step that ran, and
// {name: "approval", startedAt} for a wait that has not ended.
func (t *stepTimes) status() []any {
	n := 0
	for r := t.ran; r != 0; r &= r - 1 {
		n++
	}
	out := make([]any, 0, n)
	for i := range numSteps {
		if t.ran&(1<<i) == 0 {
			continue
		}
		if i == stepApproval && !t.waitFrom.IsZero() {
			out = append(out, map[string]any{"name": stepNameValues[i], "startedAt": timestamp(t.waitFrom)})
			continue
		}
		out = append(out, map[string]any{"name": stepNameValues[i], "durationMs": millis(t.d[i])})
	}
	return out
}

// load reads status.steps of a record, for the steps that run after it
// was written (a resumed call, a function tool's result). Entries it does
// not know are dropped.
func (t *stepTimes) load(v any) {
	list, _ := v.([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		for i, n := range stepNames {
			if n != name {
				continue
			}
			t.ran |= 1 << i
			if ms, ok := m["durationMs"].(float64); ok {
				t.d[i] = time.Duration(ms * float64(time.Millisecond))
			} else if at, err := parseTime(stringOf(m["startedAt"])); err == nil {
				t.waitFrom = at
			}
		}
	}
}

// endWait returns status.steps of a stored status with an open approval
// wait ended at now; the stored entries are not changed. ok is false when
// no wait is open.
func endWait(steps any, now time.Time) (out []any, ok bool) {
	list, _ := steps.([]any)
	for i, e := range list {
		m, _ := e.(map[string]any)
		if m["name"] != StepApproval || m["startedAt"] == nil {
			continue
		}
		from, err := parseTime(stringOf(m["startedAt"]))
		if err != nil {
			return nil, false
		}
		out = append(make([]any, 0, len(list)), list...)
		out[i] = map[string]any{"name": StepApproval, "durationMs": millis(max(now.Sub(from), 0))}
		return out, true
	}
	return nil, false
}

// endWaitIn ends the open approval wait of status st, in place.
func endWaitIn(st map[string]any, now time.Time) {
	if steps, ok := endWait(st["steps"], now); ok {
		st["steps"] = steps
	}
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

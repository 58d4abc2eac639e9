package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// stepTimes is a span processor that keeps the duration of every span the
// gateway ends while it is on: the root span of each call
// (warden.toolcall) and one span per step ("5.record", "7.invoke", …).
// It tells where the added latency of a phase goes.
type stepTimes struct {
	mu    sync.Mutex
	on    bool
	spans map[string][]time.Duration
}

func newStepTimes() *stepTimes { return &stepTimes{spans: map[string][]time.Duration{}} }

// record turns recording on or off.
func (s *stepTimes) record(on bool) {
	s.mu.Lock()
	s.on = on
	s.mu.Unlock()
}

func (s *stepTimes) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (s *stepTimes) OnEnd(sp sdktrace.ReadOnlySpan) {
	d := sp.EndTime().Sub(sp.StartTime())
	s.mu.Lock()
	if s.on {
		s.spans[sp.Name()] = append(s.spans[sp.Name()], d)
	}
	s.mu.Unlock()
}

func (s *stepTimes) Shutdown(context.Context) error   { return nil }
func (s *stepTimes) ForceFlush(context.Context) error { return nil }

// write prints, per span name in name order, the count and the p50, p99
// and maximum duration.
func (s *stepTimes) write(w io.Writer, phase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(w, "steps of %q (span durations):\n", phase)
	fmt.Fprintf(w, "%-22s %10s %10s %10s %10s\n", "span", "count", "p50", "p99", "max")
	for _, name := range slices.Sorted(maps.Keys(s.spans)) {
		d := s.spans[name]
		slices.Sort(d)
		fmt.Fprintf(w, "%-22s %10d %10s %10s %10s\n", name, len(d), ms(d[len(d)*50/100]), ms(d[len(d)*99/100]), ms(d[len(d)-1]))
	}
}

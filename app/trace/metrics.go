package trace

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics counts the trace service's own work, served at /metrics in the
// Prometheus text format. The counters cover every tenant together and
// name none.
type Metrics struct {
	queued        atomic.Int64
	queueCapacity atomic.Int64
	refused       atomic.Int64
	stored        atomic.Int64
	storedEvents  atomic.Int64
	writeErrors   atomic.Int64
	dropped       atomic.Int64

	mu        sync.Mutex
	received  map[string]int64 // by transport
	rejected  map[string]int64 // by reason
	requests  map[[2]string]int64
	writeHist [len(writeBounds) + 1]int64
	writeSum  float64
	writeN    int64
}

// writeBounds are the buckets, in seconds, of the transaction duration
// histogram.
var writeBounds = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics {
	return &Metrics{received: map[string]int64{}, rejected: map[string]int64{}, requests: map[[2]string]int64{}}
}

func (m *Metrics) observeWrite(d time.Duration, spans, events int, err error) {
	if err != nil {
		m.writeErrors.Add(1)
	} else {
		m.stored.Add(int64(spans))
		m.storedEvents.Add(int64(events))
	}
	s := d.Seconds()
	i := sort.SearchFloat64s(writeBounds[:], s)
	m.mu.Lock()
	m.writeHist[i]++
	m.writeSum += s
	m.writeN++
	m.mu.Unlock()
}

// request counts one ingest request of transport with its outcome code.
func (m *Metrics) request(transport, code string, spans, rejected int64, reason string) {
	m.mu.Lock()
	m.requests[[2]string{transport, code}]++
	m.received[transport] += spans
	if rejected > 0 {
		m.rejected[reason] += rejected
	}
	m.mu.Unlock()
}

// WritePrometheus writes the metrics in the Prometheus text format 0.0.4.
func (m *Metrics) WritePrometheus(w io.Writer) error {
	m.mu.Lock()
	received := copyMap(m.received)
	rejected := copyMap(m.rejected)
	requests := map[[2]string]int64{}
	for k, v := range m.requests {
		requests[k] = v
	}
	hist, sum, n := m.writeHist, m.writeSum, m.writeN
	m.mu.Unlock()

	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("# HELP warden_trace_spans_received_total Spans received by the ingest endpoints, by transport.\n# TYPE warden_trace_spans_received_total counter\n")
	for _, k := range sortedKeys(received) {
		p("warden_trace_spans_received_total{transport=%q} %d\n", k, received[k])
	}
	p("# HELP warden_trace_spans_rejected_total Spans rejected as invalid, by reason.\n# TYPE warden_trace_spans_rejected_total counter\n")
	for _, k := range sortedKeys(rejected) {
		p("warden_trace_spans_rejected_total{reason=%q} %d\n", k, rejected[k])
	}
	p("# HELP warden_trace_requests_total Ingest requests, by transport and outcome.\n# TYPE warden_trace_requests_total counter\n")
	rk := make([][2]string, 0, len(requests))
	for k := range requests {
		rk = append(rk, k)
	}
	sort.Slice(rk, func(i, j int) bool { return rk[i][0]+rk[i][1] < rk[j][0]+rk[j][1] })
	for _, k := range rk {
		p("warden_trace_requests_total{transport=%q,code=%q} %d\n", k[0], k[1], requests[k])
	}
	p("# HELP warden_trace_spans_stored_total Spans written to the store.\n# TYPE warden_trace_spans_stored_total counter\nwarden_trace_spans_stored_total %d\n", m.stored.Load())
	p("# HELP warden_trace_ocsf_events_stored_total OCSF events written to the store.\n# TYPE warden_trace_ocsf_events_stored_total counter\nwarden_trace_ocsf_events_stored_total %d\n", m.storedEvents.Load())
	p("# HELP warden_trace_spans_refused_total Spans refused because the write queue was full (429 / RESOURCE_EXHAUSTED).\n# TYPE warden_trace_spans_refused_total counter\nwarden_trace_spans_refused_total %d\n", m.refused.Load())
	p("# HELP warden_trace_own_spans_dropped_total Warden's own spans dropped because the write queue was full or they named no tenant.\n# TYPE warden_trace_own_spans_dropped_total counter\nwarden_trace_own_spans_dropped_total %d\n", m.dropped.Load())
	p("# HELP warden_trace_write_errors_total Failed store transactions.\n# TYPE warden_trace_write_errors_total counter\nwarden_trace_write_errors_total %d\n", m.writeErrors.Load())
	p("# HELP warden_trace_queue_spans Spans waiting to be written.\n# TYPE warden_trace_queue_spans gauge\nwarden_trace_queue_spans %d\n", m.queued.Load())
	p("# HELP warden_trace_queue_capacity_spans Capacity of the write queue.\n# TYPE warden_trace_queue_capacity_spans gauge\nwarden_trace_queue_capacity_spans %d\n", m.queueCapacity.Load())
	p("# HELP warden_trace_write_seconds Duration of the store transactions that write spans.\n# TYPE warden_trace_write_seconds histogram\n")
	var cum int64
	for i, b := range writeBounds {
		cum += hist[i]
		p("warden_trace_write_seconds_bucket{le=\"%g\"} %d\n", b, cum)
	}
	cum += hist[len(writeBounds)]
	p("warden_trace_write_seconds_bucket{le=\"+Inf\"} %d\nwarden_trace_write_seconds_sum %g\nwarden_trace_write_seconds_count %d\n", cum, sum, n)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p("# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines %d\n", runtime.NumGoroutine())
	p("# HELP go_memstats_heap_alloc_bytes Bytes of allocated heap objects.\n# TYPE go_memstats_heap_alloc_bytes gauge\ngo_memstats_heap_alloc_bytes %d\n", ms.HeapAlloc)
	return err
}

func copyMap(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

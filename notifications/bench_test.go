package notifications_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/jobs"
)

// onlyMail leaves one e-mail channel with one recipient, as a bench of
// the pause-to-e-mail path needs.
func (e *env) onlyMail() {
	e.t.Helper()
	for _, ch := range []string{"hook", "chat", "prod-only"} {
		r := do(e.t, http.MethodDelete, e.cpURL+"/v1/namespaces/default/notificationchannels/"+ch, e.admin, nil, nil)
		require.Equal(e.t, http.StatusOK, r.status, string(r.raw))
	}
	e.apply(strings.NewReplacer("SMTPHOST", e.smtp.Host, "SMTPPORT", itoa(e.smtp.Port)).Replace(`apiVersion: warden.dev/v1alpha1
kind: NotificationChannel
metadata: {name: mail}
spec:
  type: email
  email:
    to: [alice@example.com]
    from: Warden <warden@example.com>
    smtp: {host: SMTPHOST, port: SMTPPORT, username: warden, passwordSecretRef: {name: channels, key: smtp}}
`))
}

var approvalInMail = regexp.MustCompile(`Message-ID: <(ap-[a-z0-9]+)\.`)

// BenchmarkPauseToEmail pauses b.N calls at 50 a second (warden up's queue
// settings) and reports the time from each call's 202 to its e-mail
// accepted by the SMTP server: p50 and p99 in ms (the target is p99 ≤
// 1000 ms at 50 approvals/s).
func BenchmarkPauseToEmail(b *testing.B) {
	for name, newURL := range backends() {
		b.Run(name, func(b *testing.B) {
			e := startWith(b, newURL(b), jobs.Config{})
			e.onlyMail()
			token := e.bot()
			const rate = 50
			paused := make(map[string]time.Time, b.N)
			var mu sync.Mutex
			var wg sync.WaitGroup
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			body := []byte(`{"tool": "payments.refund", "input": {"amount": 5}}`)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				<-tick.C
				wg.Go(func() {
					r := do(b, http.MethodPost, e.gwURL+"/v1/tool-calls", token, body, map[string]string{"Idempotency-Key": fmt.Sprintf("bench-%d-%d", i, time.Now().UnixNano())})
					at := time.Now()
					if r.status != http.StatusAccepted {
						b.Errorf("call %d: %d %s", i, r.status, r.raw)
						return
					}
					mu.Lock()
					paused["ap-"+strings.TrimPrefix(r.str("metadata", "name"), "tc-")] = at
					mu.Unlock()
				})
			}
			wg.Wait()
			msgs := e.smtp.Wait(b, b.N, 2*time.Minute)
			b.StopTimer()
			var lat []time.Duration
			for _, m := range msgs {
				id := approvalInMail.FindSubmatch(m.Data)
				if id == nil {
					continue
				}
				if at, ok := paused[string(id[1])]; ok {
					lat = append(lat, m.At.Sub(at))
				}
			}
			require.Len(b, lat, b.N)
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkInbox1000 renders the approval inbox of a person who may
// decide 1,000 pending approvals (the target is ≤ 100 ms a page).
func BenchmarkInbox1000(b *testing.B) {
	for name, newURL := range backends() {
		b.Run(name, func(b *testing.B) {
			e := start(b, newURL(b))
			ctx := context.Background()
			for chunk := 0; chunk < 1000; chunk += 100 {
				require.NoError(b, e.st.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
					for i := chunk; i < chunk+100; i++ {
						if _, err := tx.ResourceCreate(ctx, approvalObject(fmt.Sprintf("ap-bench-%04d", i))); err != nil {
							return err
						}
					}
					return nil
				}))
			}
			cookie, _ := e.signIn("alice@example.com")
			r := e.pageAs(cookie, http.MethodGet, "/approvals", nil)
			require.Equal(b, http.StatusOK, r.status)
			require.Contains(b, string(r.raw), "1000 pending approvals")
			b.ResetTimer()
			for b.Loop() {
				r := e.pageAs(cookie, http.MethodGet, "/approvals", nil)
				if r.status != http.StatusOK {
					b.Fatal(r.status)
				}
			}
		})
	}
}

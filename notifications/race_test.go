package notifications_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/jobs"
	"github.com/warden-dev/warden/notifications"
)

// TestTwoChannelsAtOnce: two people decide one approval at the same
// instant, through the webhook and the chat callback: one wins, the
// other gets 409, and the tool runs once.
func TestTwoChannelsAtOnce(t *testing.T) {
	t.Parallel()
	for name, newURL := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := start(t, newURL(t))
			e.member("alice@example.com")
			e.member("carol@example.com")
			approved := 0
			for i := range 3 {
				call := e.pause(10 + i)
				ap := "ap-" + strings.TrimPrefix(call, "tc-")
				data, _ := json.Marshal(notifications.WebhookDecision{Approval: ap, Decision: "approve", DecidedBy: "alice@example.com"})
				body, _ := json.Marshal(notifications.WebhookPayload{Type: notifications.EventApprovalDecision, Timestamp: time.Now(), Data: data})
				var wg sync.WaitGroup
				var hook, chat resp
				start := make(chan struct{})
				wg.Go(func() {
					<-start
					hook = do(t, http.MethodPost, e.cpURL+"/v1/notifications/default/default/hook/decisions", "", body, signedHeaders(t, webhookSecret, body, time.Now()))
				})
				wg.Go(func() {
					<-start
					chat = slackClick(t, e, "carol@example.com", "deny", ap)
				})
				close(start)
				wg.Wait()
				statuses := []int{hook.status, chat.status}
				require.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, statuses, "webhook: %s\nchat: %s", hook.raw, chat.raw)
				loser := chat
				if chat.status == http.StatusOK {
					loser = hook
				}
				require.Contains(t, loser.str("error", "message"), "already decided", string(loser.raw))
				final := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=15s", e.bot(), nil, nil)
				want := "Denied"
				if hook.status == http.StatusOK {
					want = "Succeeded"
					approved++
				}
				require.Equal(t, want, final.phase(), string(final.raw))
			}
			// Every approved call ran exactly once, a denied one never.
			require.Equal(t, approved, len(e.ext.got("/refund")))
		})
	}
}

// TestDeliveredAfterRestart: the server stops between the Approval's
// commit and the e-mail's delivery; a queue started later on the same
// database sends each e-mail once, one attempt record each.
func TestDeliveredAfterRestart(t *testing.T) {
	t.Parallel()
	for name, newURL := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := newURL(t)
			e := start(t, url)
			require.NoError(t, e.queue.Stop(context.Background()))
			call := e.pause(11)
			ap := "ap-" + strings.TrimPrefix(call, "tc-")
			require.Empty(t, e.smtp.Messages(), "sent while no queue ran")
			require.Empty(t, e.deliveries(ap))

			// The restarted worker: a new queue on the same database.
			workers := river.NewWorkers()
			notif := jobs.NewNotifications(workers)
			jobs.NewApprovals(workers)
			jobs.NewInvitations(workers, notif)
			cfg := jobs.Config{Workers: workers, TestOnly: true, FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond}
			var q *jobs.Queue
			var err error
			if pg, ok := e.st.(*postgres.Store); ok {
				q, err = jobs.OpenPostgres(context.Background(), url, pg.Pool(), cfg)
			} else {
				q, err = jobs.OpenSQLite(context.Background(), strings.TrimPrefix(url, "sqlite://"), cfg)
			}
			require.NoError(t, err)
			notif.SetQueue(q)
			notif.Bind(e.svc)
			require.NoError(t, q.Start(context.Background()))
			t.Cleanup(func() { _ = q.Stop(context.Background()) })

			msgs := e.smtp.Wait(t, 2, wait)
			recs := e.waitDeliveries(ap, 4)
			require.Len(t, msgs, 2)
			perChannel := map[string]int{}
			for _, d := range recs {
				require.Equal(t, "delivered", d.Outcome)
				require.Equal(t, 1, d.Attempt)
				perChannel[d.Channel+"/"+d.Recipient]++
			}
			for k, n := range perChannel {
				require.Equal(t, 1, n, k)
			}
		})
	}
}

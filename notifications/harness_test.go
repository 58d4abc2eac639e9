package notifications_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/workload"
	"github.com/warden-dev/warden/jobs"
	"github.com/warden-dev/warden/notifications"
	"github.com/warden-dev/warden/notifications/smtptest"
	approvalsweb "github.com/warden-dev/warden/web/approvals"
)

const wait = 20 * time.Second

func backends() map[string]func(t testing.TB) string {
	return map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "warden.db") },
		"postgres": func(t testing.TB) string { return pgtest.NewDatabase(t) },
	}
}

// recorder is an HTTP server that keeps every request: the tool, the
// webhook receiver and the chat webhook.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs map[string][]recorded
	// status answers a path with this status instead of 200.
	status map[string]int
	// react, when set for a path, acts on each request to it once the
	// request is answered (a receiver that processes deliveries
	// asynchronously, as integrations do).
	react map[string]func(recorded)
}

type recorded struct {
	header http.Header
	body   []byte
}

func newRecorder(t testing.TB) *recorder {
	r := &recorder{reqs: map[string][]recorded{}, status: map[string]int{}, react: map[string]func(recorded){}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		got := recorded{header: req.Header.Clone(), body: b}
		r.reqs[req.URL.Path] = append(r.reqs[req.URL.Path], got)
		st, react := r.status[req.URL.Path], r.react[req.URL.Path]
		r.mu.Unlock()
		if react != nil {
			defer func() { go react(got) }()
		}
		if st != 0 {
			w.WriteHeader(st)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"refunded":true}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) got(path string) []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs[path]...)
}

// env is a running Warden with River jobs, the notification service, an
// SMTP server and the HTTP endpoints channels post to.
type env struct {
	t      testing.TB
	st     store.Store
	srv    *server.Server
	svc    *notifications.Service
	cpURL  string
	gwURL  string
	admin  string
	smtp   *smtptest.Server
	ext    *recorder
	queue  *jobs.Queue
	linkKy []byte
}

const (
	webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	slackSecret   = "8f742231b10e8888abcd99yyyzzz85a5"
)

func start(t testing.TB, storeURL string) *env {
	t.Helper()
	return startWith(t, storeURL, jobs.Config{FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond})
}

// startWith is start with the queue's fetch settings of qc (zero values
// are warden up's defaults).
func startWith(t testing.TB, storeURL string, qc jobs.Config) *env {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	admin, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	master := make([]byte, 32)
	_, _ = rand.Read(master)
	keyring, err := secret.NewKeyring(master)
	require.NoError(t, err)

	workers := river.NewWorkers()
	approvals := jobs.NewApprovals(workers)
	notif := jobs.NewNotifications(workers)
	invites := jobs.NewInvitations(workers, notif)
	var queue *jobs.Queue
	cfg := jobs.Config{Workers: workers, TestOnly: true, FetchCooldown: qc.FetchCooldown, FetchPollInterval: qc.FetchPollInterval}
	if pg, ok := st.(*postgres.Store); ok {
		queue, err = jobs.OpenPostgres(ctx, storeURL, pg.Pool(), cfg)
	} else {
		queue, err = jobs.OpenSQLite(ctx, strings.TrimPrefix(storeURL, "sqlite://"), cfg)
	}
	require.NoError(t, err)
	approvals.SetQueue(queue)
	notif.SetQueue(queue)

	mail := smtptest.Start(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	linkKey := notifications.DeriveLinkKey(master)
	svc, err := notifications.New(notifications.Config{
		Store: st, Secrets: secret.NewBroker(keyring), Jobs: notif, Invites: invites, PublicURL: "http://console.test", LinkKey: linkKey,
		TLS: &tls.Config{RootCAs: mail.Roots, MinVersion: tls.VersionTLS12}, Logger: logger,
	})
	require.NoError(t, err)
	oidcCfg := &oidc.Config{Issuers: []oidc.IssuerConfig{{Name: "Acme SSO", IssuerURL: "https://idp.invalid", ClientID: "warden"}},
		RedirectURL: "http://127.0.0.1/auth/callback"}
	srv, err := server.New(server.Config{Store: st, Keyring: keyring, Queue: approvals, Announcer: svc, Inviter: svc, OIDC: oidcCfg, PublicRoutes: func(r fiber.Router) {
		svc.Register(r)
		approvalsweb.NewLinkHandler(svc, nil).Register(r)
	}, Logger: logger})
	require.NoError(t, err)
	svc.SetDecider(srv.Gateway())
	approvals.Bind(srv.Gateway())
	notif.Bind(svc)
	invites.Bind(svc)
	require.NoError(t, queue.Start(ctx))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeAll(sctx, ln, gln) }()
	t.Cleanup(func() {
		_ = queue.Stop(context.Background())
		cancel()
		<-done
	})
	e := &env{t: t, st: st, srv: srv, svc: svc, cpURL: "http://" + ln.Addr().String(), gwURL: "http://" + gln.Addr().String(),
		admin: admin, smtp: mail, ext: newRecorder(t), queue: queue, linkKy: linkKey}
	e.apply(e.fixture())
	return e
}

// fixture: a financial tool (approval by class), agent bot in dev, the
// three channels, their Secrets, and alice as approver of default.
func (e *env) fixture() string {
	return strings.NewReplacer("EXT", e.ext.URL, "SMTPHOST", e.smtp.Host, "SMTPPORT", itoa(e.smtp.Port),
		"SMTPPASS", e.smtp.Password, "WHSEC", webhookSecret, "SLACKSEC", slackSecret).Replace(`apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: m1}
spec: {provider: openai, model: gpt-4o, capabilities: {toolUse: true}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: payments.refund}
spec:
  source: rest
  sideEffect: financial
  rest: {url: "EXT/refund"}
  inputSchema: {type: object, required: [amount], properties: {amount: {type: number}, customer: {type: string}}}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  tools: [{name: payments.refund}]
  policies: [money]
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: bot-dev}
spec: {agentRef: {name: bot}, environment: dev}
---
apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: money}
spec:
  version: "2"
  rules:
    - name: refunds-need-a-person
      when: 'tool.name == "payments.refund"'
      action: require_approval
      message: refunds are checked by a person
---
apiVersion: warden.dev/v1alpha1
kind: Secret
metadata: {name: channels}
spec:
  data: {smtp: "SMTPPASS", webhook: "WHSEC", slackURL: "EXT/slack-in", slackSigning: "SLACKSEC"}
---
apiVersion: warden.dev/v1alpha1
kind: NotificationChannel
metadata: {name: mail}
spec:
  type: email
  selector: {environments: [dev], sideEffects: [financial]}
  email:
    to: [alice@example.com, bob@example.com]
    from: Warden <warden@example.com>
    smtp: {host: SMTPHOST, port: SMTPPORT, username: warden, passwordSecretRef: {name: channels, key: smtp}}
---
apiVersion: warden.dev/v1alpha1
kind: NotificationChannel
metadata: {name: hook}
spec:
  type: webhook
  maxAttempts: 3
  webhook: {url: "EXT/hook", signingSecretRef: {name: channels, key: webhook}}
---
apiVersion: warden.dev/v1alpha1
kind: NotificationChannel
metadata: {name: chat}
spec:
  type: slack
  slack: {webhookURLSecretRef: {name: channels, key: slackURL}, signingSecretRef: {name: channels, key: slackSigning}}
---
apiVersion: warden.dev/v1alpha1
kind: NotificationChannel
metadata: {name: prod-only}
spec:
  type: webhook
  selector: {environments: [prod]}
  webhook: {url: "EXT/prod-hook", signingSecretRef: {name: channels, key: webhook}}
---
apiVersion: warden.dev/v1alpha1
kind: RoleBinding
metadata: {name: approvers}
spec:
  role: approver
  subjects: [{kind: User, name: alice@example.com}, {kind: User, name: carol@example.com}]
`)
}

func itoa(n int) string { return strconv.Itoa(n) }

// member makes email a member of the local tenant.
func (e *env) member(email string) {
	e.t.Helper()
	require.NoError(e.t, e.st.Update(context.Background(), server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
		return tx.MemberUpsert(ctx, store.Member{Email: email, Status: "active", CreatedAt: time.Now()})
	}))
}

type resp struct {
	status int
	body   map[string]any
	raw    []byte
}

func (r resp) str(path ...string) string {
	var cur any = r.body
	for _, p := range path {
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	s, _ := cur.(string)
	return s
}

func do(t testing.TB, method, url, token string, body []byte, header map[string]string) resp {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := resp{status: res.StatusCode, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func (e *env) apply(yaml string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.cpURL+"/v1/resources/apply", strings.NewReader(yaml))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "application/yaml")
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	require.Equal(e.t, http.StatusOK, res.StatusCode, string(b))
}

func (e *env) bot() string {
	e.t.Helper()
	tok, _, err := e.srv.Issuer().Issue(context.Background(), workload.IssueParams{
		Tenant: server.LocalTenant, Namespace: "default", Agent: "bot", Environment: "dev", Audience: workload.AudienceToolGateway,
	})
	require.NoError(e.t, err)
	return tok
}

// pause makes a call that needs approval and returns the call's name.
func (e *env) pause(amount int) string {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": "payments.refund", "input": map[string]any{"amount": amount, "customer": "c-42"}})
	r := do(e.t, http.MethodPost, e.gwURL+"/v1/tool-calls", e.bot(), body, nil)
	require.Equal(e.t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(e.t, "AwaitingApproval", r.str("status", "phase"))
	return r.str("metadata", "name")
}

// deliveries reads the delivery records of an approval.
func (e *env) deliveries(approval string) []store.Delivery {
	e.t.Helper()
	var out []store.Delivery
	require.NoError(e.t, e.st.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = store.DeliveryList(ctx, r, "default", approval)
		return err
	}))
	return out
}

// waitDeliveries waits until approval has n delivery records.
func (e *env) waitDeliveries(approval string, n int) []store.Delivery {
	e.t.Helper()
	var got []store.Delivery
	require.Eventually(e.t, func() bool { got = e.deliveries(approval); return len(got) >= n }, wait, 20*time.Millisecond,
		"want %d delivery records of %s", n, approval)
	return got
}

// approvalObject is a pending Approval of a financial call of bot in dev.
func approvalObject(name string) *resource.Object {
	return &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindApproval,
		Metadata: resource.ObjectMeta{Name: name, Namespace: "default"},
		Spec: map[string]any{"toolCallRef": map[string]any{"name": "tc-" + name}, "agentRef": map[string]any{"name": "bot"},
			"toolRef": map[string]any{"name": "payments.refund"}, "sideEffect": "financial", "input": map[string]any{"amount": 1},
			"expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
		Status: map[string]any{"status": "pending"}}
}

// signIn makes email a member with a console session and returns the
// session cookie and its CSRF token.
func (e *env) signIn(email string) (cookie, csrf string) {
	e.t.Helper()
	return e.signInAs(email, false)
}

// signInAs is signIn, as a tenant owner when owner is set.
func (e *env) signInAs(email string, owner bool) (cookie, csrf string) {
	e.t.Helper()
	require.NoError(e.t, e.st.Update(context.Background(), server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
		return tx.MemberUpsert(ctx, store.Member{Email: email, Status: "active", Owner: owner, CreatedAt: time.Now()})
	}))
	now := time.Now().UTC()
	cookie, csrf = "sess-"+email, "csrf-"+email
	sum := sha256.Sum256([]byte(cookie))
	require.NoError(e.t, e.st.SessionInsert(context.Background(), store.Session{IDHash: hex.EncodeToString(sum[:]), Tenant: server.LocalTenant,
		Email: email, CSRFToken: csrf, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	return cookie, csrf
}

// phase is a call's phase in an answer: the record's, or the error's
// details for a call that ended refused (ApprovalDenied).
func (r resp) phase() string {
	if p := r.str("status", "phase"); p != "" {
		return p
	}
	return r.str("error", "details", "phase")
}

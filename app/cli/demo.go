package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/listener"
)

// defaultDemoListen is where `warden demo tools` listens; the Tools of
// examples/fleet/demo point there.
const defaultDemoListen = "127.0.0.1:9090"

func newDemoCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Helpers for trying Warden out locally",
	}
	cmd.AddCommand(newDemoToolsCmd(a), newDemoModelsCmd(a), newDemoMCPCmd(a))
	return cmd
}

func newDemoToolsCmd(a *app) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Serve demo tool endpoints (tickets, refunds, issues) for the tool gateway tour",
		Long: `tools serves a few small HTTP tool implementations, so that the Tools of
examples/fleet/demo/ have something real to call through the tool gateway:

  POST /tickets/search   read-only; the tickets carry customer e-mail addresses, which
                         the gateway redacts (safety.redactPII)
  POST /tickets/reply    communication; sends a reply
  POST /refunds          financial; issues a refund and returns its id
  POST /issues           external_write; opens an issue

Every execution is printed with a counter per endpoint, the tool call's name and the
idempotency key the gateway sent, so you can see that an approved call runs once and a
retried call is not executed again. State lives in memory and is lost on exit.
Stop with Ctrl-C.`,
		Example: `  warden demo tools
  warden demo tools --listen 127.0.0.1:19090`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.demoTools(cmd.Context(), listen)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultDemoListen, "address to listen on (the Tools in examples/fleet/demo/ use "+defaultDemoListen+")")
	return cmd
}

func (a *app) demoTools(ctx context.Context, listen string) error {
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return usagef("--listen %q: want host:port, e.g. %s", listen, defaultDemoListen)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	d := newDemoTools(a.env.Stdout, a.env.Now)
	// As every listener: a panic is a 500 in the log, and slow clients are
	// cut off.
	srv := &http.Server{Handler: listener.RecoverHTTP(d, slog.New(slog.NewTextHandler(a.env.Stderr, nil))),
		ReadHeaderTimeout: listener.DefaultReadHeaderTimeout, ReadTimeout: listener.DefaultReadTimeout, IdleTimeout: listener.DefaultIdleTimeout}
	base := "http://" + ln.Addr().String()
	d.printf("Demo tools listening on %s (Ctrl-C to stop):\n", base)
	for _, e := range demoEndpoints {
		d.printf("  %-6s %-16s %s\n", "POST", e.path, e.what)
	}
	if ln.Addr().String() != defaultDemoListen {
		d.printf("The Tools in examples/fleet/demo/ call %s: change their spec.rest.url to %s.\n", "http://"+defaultDemoListen, base)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("demo tools: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stop demo tools: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("demo tools: %w", err)
	}
	d.printf("Demo tools stopped.\n")
	return nil
}

// demoEndpoints are the demo tools' endpoints, for the start-up message.
var demoEndpoints = []struct{ path, what string }{
	{"/tickets/search", "read_only: search tickets (results carry customer e-mail addresses)"},
	{"/tickets/reply", "communication: reply to a ticket"},
	{"/refunds", "financial: refund a charge"},
	{"/issues", "external_write: open an issue"},
}

// demoTicket is a support ticket of the demo data.
type demoTicket struct {
	ID        int               `json:"id"`
	Subject   string            `json:"subject"`
	Status    string            `json:"status"`
	Requester map[string]string `json:"requester"`
}

var demoTicketData = []demoTicket{
	{ID: 1042, Subject: "Charged twice for order 7731", Status: "open", Requester: map[string]string{"name": "Jane Doe", "email": "jane.doe@example.com"}},
	{ID: 1043, Subject: "Refund for a damaged blender", Status: "pending", Requester: map[string]string{"name": "Max Mustermann", "email": "max@example.org"}},
	{ID: 1044, Subject: "Where is my parcel?", Status: "new", Requester: map[string]string{"name": "Ana Lima", "email": "ana.lima@example.net"}},
}

// demoTools is the handler of `warden demo tools`: in-memory tool
// implementations that count and print every execution.
type demoTools struct {
	mu    sync.Mutex
	out   io.Writer
	now   func() time.Time
	count map[string]int
	mux   *http.ServeMux
}

func newDemoTools(out io.Writer, now func() time.Time) *demoTools {
	d := &demoTools{out: out, now: now, count: map[string]int{}, mux: http.NewServeMux()}
	d.mux.HandleFunc("/tickets/search", d.searchTickets)
	d.mux.HandleFunc("POST /tickets/reply", d.replyTicket)
	d.mux.HandleFunc("POST /refunds", d.refund)
	d.mux.HandleFunc("POST /issues", d.createIssue)
	d.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		paths := make([]string, len(demoEndpoints))
		for i, e := range demoEndpoints {
			paths[i] = e.path
		}
		demoJSON(w, http.StatusOK, map[string]any{"service": "warden demo tools", "endpoints": paths})
	})
	return d
}

func (d *demoTools) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.mux.ServeHTTP(w, r) }

// printf writes one message; handlers run concurrently.
func (d *demoTools) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format, args...)
}

// executed counts an execution of endpoint and prints the line what
// renders for execution number n, with the tool call and idempotency key
// the gateway sent. It returns n.
func (d *demoTools) executed(r *http.Request, endpoint string, what func(n int) string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.count[endpoint]++
	n := d.count[endpoint]
	via := "called directly, not through Warden"
	if call := r.Header.Get("Warden-Tool-Call"); call != "" {
		via = call + ", idempotency key " + prefix(r.Header.Get("Idempotency-Key"), 12)
	}
	fmt.Fprintf(d.out, "%s  %s  [%s]\n", d.now().Format("15:04:05"), what(n), via)
	return n
}

// input decodes the JSON body (or, for GET, the query) into a map.
func demoInput(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	in := map[string]any{}
	if r.Method == http.MethodGet {
		for k, v := range r.URL.Query() {
			in[k] = v[0]
		}
		return in, true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(strings.TrimSpace(string(body))) > 0 {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		demoJSON(w, http.StatusBadRequest, map[string]any{"error": "the body must be a JSON object: " + err.Error()})
		return nil, false
	}
	return in, true
}

func demoJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (d *demoTools) searchTickets(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		demoJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "use GET or POST"})
		return
	}
	in, ok := demoInput(w, r)
	if !ok {
		return
	}
	query, _ := in["query"].(string)
	status, _ := in["status"].(string)
	found := []demoTicket{}
	for _, t := range demoTicketData {
		if query != "" && !strings.Contains(strings.ToLower(t.Subject), strings.ToLower(query)) {
			continue
		}
		if status != "" && t.Status != status {
			continue
		}
		found = append(found, t)
	}
	d.executed(r, "tickets/search", func(n int) string {
		return fmt.Sprintf("ticket search #%d: query %q, %d ticket(s) found", n, query, len(found))
	})
	demoJSON(w, http.StatusOK, map[string]any{"query": query, "count": len(found), "tickets": found})
}

func (d *demoTools) replyTicket(w http.ResponseWriter, r *http.Request) {
	in, ok := demoInput(w, r)
	if !ok {
		return
	}
	n := d.executed(r, "tickets/reply", func(n int) string {
		return fmt.Sprintf("reply sent #%d: ticket %v", n, in["ticketId"])
	})
	demoJSON(w, http.StatusOK, map[string]any{"ticketId": in["ticketId"], "replyId": fmt.Sprintf("rp_%04d", n), "status": "sent"})
}

func (d *demoTools) refund(w http.ResponseWriter, r *http.Request) {
	in, ok := demoInput(w, r)
	if !ok {
		return
	}
	amount, ok := in["amount"].(float64)
	if !ok || amount <= 0 {
		demoJSON(w, http.StatusBadRequest, map[string]any{"error": "amount must be a positive number"})
		return
	}
	n := d.executed(r, "refunds", func(n int) string {
		return fmt.Sprintf("refund executed #%d: %.2f USD on charge %v (re_%04d)", n, amount, in["chargeId"], n)
	})
	demoJSON(w, http.StatusOK, map[string]any{"refundId": fmt.Sprintf("re_%04d", n), "chargeId": in["chargeId"], "amount": amount, "status": "succeeded"})
}

func (d *demoTools) createIssue(w http.ResponseWriter, r *http.Request) {
	in, ok := demoInput(w, r)
	if !ok {
		return
	}
	n := d.executed(r, "issues", func(n int) string {
		return fmt.Sprintf("issue created #%d: %q", n, in["title"])
	})
	demoJSON(w, http.StatusCreated, map[string]any{"number": n, "title": in["title"], "state": "open"})
}

package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
)

// SoakOptions configures RunSoak.
type SoakOptions struct {
	// Store is the store URL; empty means a fresh SQLite file in a
	// temporary directory.
	Store string
	// Rate is the arrival rate of governed calls, calls/s.
	Rate int
	// Duration is how long the calls go on.
	Duration time.Duration
	// Every is how often the store's size is printed.
	Every time.Duration
	// Retention is the tenant's spec.retention for tool calls, events and
	// audit records alike (a ToolCall still waits for the idempotency
	// window, 10 minutes by default, and a minute more).
	Retention time.Duration
	// Vacuum, on Postgres, runs VACUUM this often, for a server whose
	// autovacuum is off (Postgres reuses the space of deleted rows only
	// once they are vacuumed); zero leaves it to autovacuum.
	Vacuum time.Duration
}

// WithDefaults fills in the defaults: 200 calls/s for 15 minutes, a line
// every 30 seconds, one minute of retention.
func (o SoakOptions) WithDefaults() SoakOptions {
	if o.Rate <= 0 {
		o.Rate = 200
	}
	if o.Duration <= 0 {
		o.Duration = 15 * time.Minute
	}
	if o.Every <= 0 {
		o.Every = 30 * time.Second
	}
	if o.Retention <= 0 {
		o.Retention = time.Minute
	}
	return o
}

// SoakSample is one line of RunSoak: the calls made so far and the
// store's size.
type SoakSample struct {
	Elapsed time.Duration
	Calls   int64
	Errors  int64
	Size    StoreSize
}

// StoreSize is a store's footprint. For SQLite, Bytes is the database
// file and WAL, and Used the pages that hold data (the rest are free pages
// that new rows re-use); for Postgres both are the database's size.
type StoreSize struct {
	Bytes, Used int64
	// Tables is the size of each table with its indexes.
	Tables map[string]int64
}

// RunSoak drives governed calls at o.Rate for o.Duration through a
// private Warden whose tenant keeps its runtime data o.Retention, and
// prints the store's size every o.Every: with retention the size levels
// off once the oldest calls are due (make soak).
func RunSoak(ctx context.Context, o SoakOptions, w io.Writer) ([]SoakSample, error) {
	o = o.WithDefaults()
	tool, err := startTool()
	if err != nil {
		return nil, err
	}
	defer tool.Close()
	storeURL := o.Store
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "warden-soak-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		storeURL = "sqlite://" + filepath.Join(dir, "warden.db")
	}
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = st.Close() }()
	sizer, err := newSizer(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	defer sizer.close()
	admin, _, err := server.Bootstrap(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	if admin == "" {
		return nil, errors.New("bench: the store already holds a Warden installation; give the soak a fresh database of its own")
	}
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeAll(sctx, ln, gln) }()
	defer func() {
		cancel()
		<-done
	}()
	cp, gw := "http://"+ln.Addr().String(), "http://"+gln.Addr().String()
	ret := o.Retention.String()
	if err := apply(ctx, cp, admin, fixture(tool.Addr, 20)+`
---
apiVersion: warden.dev/v1alpha1
kind: Tenant
metadata: {name: `+server.LocalTenant+`}
spec:
  retention: {toolCalls: `+ret+`, events: `+ret+`, audit: `+ret+`}
`); err != nil {
		return nil, err
	}
	// A workload token lives five minutes: the soak takes a fresh one
	// every minute.
	var token atomic.Value
	issue := func() error {
		tok, _, err := srv.Issuer().Issue(ctx, workload.IssueParams{Tenant: server.LocalTenant, Namespace: "default",
			Agent: "bench-bot", Environment: "dev", Audience: workload.AudienceToolGateway})
		if err == nil {
			token.Store(tok)
		}
		return err
	}
	if err := issue(); err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}}
	var seq, calls, errs atomic.Int64
	governed := func(ctx context.Context) error {
		body := fmt.Sprintf(`{"tool":"bench.lookup","input":{"q":%d}}`, seq.Add(1))
		err := post(ctx, client, gw+"/v1/tool-calls", token.Load().(string), body)
		calls.Add(1)
		if err != nil {
			errs.Add(1)
		}
		return err
	}
	base, err := sizer.size(ctx)
	if err != nil {
		return nil, err
	}
	scheme, _, _ := strings.Cut(storeURL, "://")
	fmt.Fprintf(w, "soak: store %s, %d governed calls/s for %s, retention %s (tool calls also wait for the 10m idempotency window and a minute)\n",
		scheme, o.Rate, o.Duration, o.Retention)
	fmt.Fprintf(w, "%8s %10s %8s %12s %12s %12s\n", "elapsed", "calls", "errors", "store MB", "used MB", "bytes/call")
	var out []SoakSample
	sample := func(start time.Time) error {
		sz, err := sizer.size(ctx)
		if err != nil {
			return err
		}
		s := SoakSample{Elapsed: time.Since(start).Round(time.Second), Calls: calls.Load(), Errors: errs.Load(), Size: sz}
		out = append(out, s)
		perCall := "-"
		if s.Calls > 0 {
			perCall = fmt.Sprint((sz.Used - base.Used) / s.Calls)
		}
		fmt.Fprintf(w, "%8s %10d %8d %12.1f %12.1f %12s\n", s.Elapsed, s.Calls, s.Errors, mb(sz.Bytes), mb(sz.Used), perCall)
		return nil
	}
	start := time.Now()
	finished := make(chan Result, 1)
	go func() { finished <- fixedRate(ctx, governed, o.Rate, o.Duration) }()
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	reissue := time.NewTicker(time.Minute)
	defer reissue.Stop()
	var vacuum <-chan time.Time
	if o.Vacuum > 0 && sizer.vacuum != nil {
		t := time.NewTicker(o.Vacuum)
		defer t.Stop()
		vacuum = t.C
	}
	for {
		select {
		case <-vacuum:
			if err := sizer.vacuum(ctx); err != nil {
				return out, err
			}
		case <-reissue.C:
			if err := issue(); err != nil {
				return out, err
			}
		case <-tick.C:
			if err := sample(start); err != nil {
				return out, err
			}
		case <-finished:
			if err := sample(start); err != nil {
				return out, err
			}
			last := out[len(out)-1].Size
			fmt.Fprintf(w, "tables with their indexes: %-14s %10s %10s\n", "", "MB", "bytes/call")
			names := make([]string, 0, len(last.Tables))
			for n := range last.Tables {
				names = append(names, n)
			}
			sort.Slice(names, func(i, j int) bool { return last.Tables[names[i]] > last.Tables[names[j]] })
			for _, n := range names {
				if last.Tables[n] >= 64<<10 {
					fmt.Fprintf(w, "  %-38s %10.1f %10d\n", n, mb(last.Tables[n]), last.Tables[n]/max(1, out[len(out)-1].Calls))
				}
			}
			return out, nil
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// sizer measures a store's size through a connection of its own.
type sizer struct {
	size func(ctx context.Context) (StoreSize, error)
	// vacuum vacuums the database; nil for SQLite.
	vacuum func(ctx context.Context) error
	close  func()
}

func newSizer(ctx context.Context, storeURL string) (*sizer, error) {
	if backend.Embedded(storeURL) {
		path := strings.TrimPrefix(storeURL, "sqlite://")
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			return nil, err
		}
		return &sizer{close: func() { _ = db.Close() }, size: func(ctx context.Context) (StoreSize, error) {
			return sqliteSize(ctx, db, path)
		}}, nil
	}
	conn, err := pgx.Connect(ctx, storeURL)
	if err != nil {
		return nil, fmt.Errorf("soak: connect to measure the database: %w", err)
	}
	return &sizer{close: func() { _ = conn.Close(context.WithoutCancel(ctx)) }, size: func(ctx context.Context) (StoreSize, error) {
		return postgresSize(ctx, conn)
	}, vacuum: func(ctx context.Context) error {
		if _, err := conn.Exec(ctx, `VACUUM`); err != nil {
			return fmt.Errorf("soak: vacuum: %w", err)
		}
		return nil
	}}, nil
}

func sqliteSize(ctx context.Context, db *sql.DB, path string) (StoreSize, error) {
	var s StoreSize
	for _, f := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			s.Bytes += fi.Size()
		}
	}
	var pages, free, pageSize int64
	if err := db.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count()), (SELECT freelist_count FROM pragma_freelist_count()),
		(SELECT page_size FROM pragma_page_size())`).Scan(&pages, &free, &pageSize); err != nil {
		return s, fmt.Errorf("soak: measure the database: %w", err)
	}
	s.Used = (pages - free) * pageSize
	s.Tables = map[string]int64{}
	rows, err := db.QueryContext(ctx, `SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat d
		LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1`)
	if err != nil {
		return s, nil // dbstat is optional
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return s, err
		}
		s.Tables[name] = n
	}
	return s, rows.Err()
}

func postgresSize(ctx context.Context, conn *pgx.Conn) (StoreSize, error) {
	var s StoreSize
	if err := conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&s.Bytes); err != nil {
		return s, fmt.Errorf("soak: measure the database: %w", err)
	}
	s.Used = s.Bytes
	rows, err := conn.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname = current_schema()`)
	if err != nil {
		return s, fmt.Errorf("soak: measure the tables: %w", err)
	}
	s.Tables = map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return s, err
		}
		s.Tables[name] = n
	}
	return s, rows.Err()
}

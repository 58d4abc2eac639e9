package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-dev/warden/app/store"
)

// AppRole is the role the server connects as. The migrations create it
// (LOGIN NOSUPERUSER NOBYPASSRLS, owning nothing, without a password).
const AppRole = "warden_app"

// notifyChannel is the LISTEN/NOTIFY channel of change-log commits; the
// payload names the tenant and whether the commit wrote configuration (see
// notifyPayload).
const notifyChannel = "warden_changes"

// Prefixes of notifyChannel payloads. Tenant ids in practice are DNS-1123
// labels, which never contain ':'.
const (
	payloadConfig = "c:"
	payloadRecord = "r:"
)

// notifyPayload is the notification of a commit of tenant: the bare tenant
// id when the commit wrote runtime records only, which is what every
// commit sent before ListenConfig existed, so replicas of either version
// read it alike; "c:<tenant>" when it wrote configuration. A tenant id
// containing ':' is sent as "r:<tenant>" when bare would be ambiguous.
func notifyPayload(tenant string, config bool) string {
	switch {
	case config:
		return payloadConfig + tenant
	case strings.Contains(tenant, ":"):
		return payloadRecord + tenant
	}
	return tenant
}

// parseNotifyPayload inverts notifyPayload.
func parseNotifyPayload(payload string) (tenant string, config bool) {
	if t, ok := strings.CutPrefix(payload, payloadConfig); ok {
		return t, true
	}
	if t, ok := strings.CutPrefix(payload, payloadRecord); ok {
		return t, false
	}
	return payload, false
}

// Options configures Open.
type Options struct {
	// AppURL is the connection URL of the application role. When empty it
	// is derived from the Open URL by replacing its user with warden_app
	// and dropping the password (see AppURLFor); set it explicitly when
	// the app role authenticates with a password or certificate.
	AppURL string
	// Logger receives driver diagnostics; nil discards them.
	Logger *slog.Logger
	// Now is the clock used for timestamps; nil means time.Now.
	Now func() time.Time
	// MaxConns bounds the application pool; zero means 10.
	MaxConns int32
	// NoMigrate checks that every migration is applied instead of
	// applying them: a schema that is behind is a *SchemaBehindError.
	NoMigrate bool
}

// WithDefaults returns o with zero fields replaced by their defaults.
func (o Options) WithDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 10
	}
	return o
}

// AppURLFor derives the application role's URL from an owner URL: same
// host, database and options, user warden_app, no password.
func AppURLFor(ownerURL string) (string, error) {
	u, err := url.Parse(ownerURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("postgres: cannot derive the app URL from %q: not a postgres:// URL; set AppURL", redact(ownerURL))
	}
	u.User = url.User(AppRole)
	return u.String(), nil
}

// redact hides the password of a URL in messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Store is the Postgres implementation of store.Store.
type Store struct {
	pool     *pgxpool.Pool
	syncer   *syncer
	appURL   string
	key      []byte
	notifier *store.Notifier
	// configNotifier signals commits that wrote configuration kinds.
	configNotifier *store.Notifier
	now            func() time.Time
	log            *slog.Logger

	stopListener  context.CancelFunc
	listenerDone  chan struct{}
	listenerReady chan struct{}
	// spans compresses and decompresses span blocks.
	spans *store.SpanCodec
}

var _ store.Store = (*Store)(nil)

// Open migrates the database named by ownerURL (as that role: the owner or a
// superuser; it needs CREATEROLE the first time, to create warden_app) and
// connects the application pool and the change listener as the app role.
func Open(ctx context.Context, ownerURL string, opts Options) (*Store, error) {
	opts = opts.WithDefaults()
	appURL := opts.AppURL
	if appURL == "" {
		var err error
		if appURL, err = AppURLFor(ownerURL); err != nil {
			return nil, err
		}
	}
	if opts.NoMigrate {
		if err := checkSchema(ctx, ownerURL); err != nil {
			return nil, err
		}
	} else if err := migrate(ctx, ownerURL, func(name string) {
		opts.Logger.Info("applied migration", "driver", "postgres", "migration", name)
	}); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(appURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse app URL %s: %w", redact(appURL), err)
	}
	cfg.MaxConns = opts.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect as app role: %w", err)
	}
	codec, err := store.NewSpanCodec()
	if err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{
		spans:          codec,
		pool:           pool,
		syncer:         &syncer{pool: pool},
		appURL:         appURL,
		notifier:       store.NewNotifier(),
		configNotifier: store.NewNotifier(),
		now:            opts.Now,
		log:            opts.Logger,
		listenerDone:   make(chan struct{}),
		listenerReady:  make(chan struct{}),
	}
	// warden_meta is readable by the app role: the key is not tenant data.
	if err := pool.QueryRow(ctx, `SELECT value FROM warden_meta WHERE key = $1`, metaContinueKey).Scan(&s.key); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: read continue key as %s: %w", AppRole, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.stopListener = cancel
	go s.listen(lctx)
	return s, nil
}

// Close stops the listener and closes the pool.
func (s *Store) Close() error {
	s.stopListener()
	<-s.listenerDone
	s.notifier.Close()
	s.configNotifier.Close()
	s.pool.Close()
	s.spans.Close()
	return nil
}

// Pool returns the application role's connection pool, for callers such as
// job queues that share the database. Queries through it see no tenant rows
// unless they set warden.tenant_id themselves.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// ListenerReady is closed once the change listener has subscribed for the
// first time; tests wait on it before expecting cross-replica signals.
func (s *Store) ListenerReady() <-chan struct{} { return s.listenerReady }

// Listen calls fn after every commit that appended to a tenant's change
// log, on this replica (directly after commit) or any other (through
// LISTEN/NOTIFY). A commit may therefore be signalled more than once; the
// callback is a hint to read ChangesSince, not a count.
func (s *Store) Listen(fn func(tenant string)) (stop func()) {
	return s.notifier.Listen(fn)
}

// ListenConfig calls fn after every commit that wrote a resource of a
// configuration kind (any kind but the runtime records of
// resource.IsRecordKind), on this replica or any other; the change
// notification's payload says which commits did (see notifyPayload).
func (s *Store) ListenConfig(fn func(tenant string)) (stop func()) {
	return s.configNotifier.Listen(fn)
}

// ConfigGeneration counts the configuration commits of tenant this store
// has seen; see store.Store.
func (s *Store) ConfigGeneration(tenant string) uint64 {
	return s.configNotifier.Generation(tenant)
}

// listen keeps one dedicated connection LISTENing on the change channel,
// reconnecting with backoff, and forwards each notification in-process.
func (s *Store) listen(ctx context.Context) {
	defer close(s.listenerDone)
	backoff := 100 * time.Millisecond
	ready := false
	for {
		err := s.listenOnce(ctx, func() {
			backoff = 100 * time.Millisecond
			if !ready {
				ready = true
				close(s.listenerReady)
			}
		})
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("change listener disconnected; reconnecting", "error", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, subscribed func()) error {
	conn, err := pgx.Connect(ctx, s.appURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	subscribed()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		tenant, config := parseNotifyPayload(n.Payload)
		s.notifier.Notify(tenant)
		if config {
			s.configNotifier.Notify(tenant)
		}
	}
}

// setTenant scopes the transaction to tenant for row-level security.
func setTenant(ctx context.Context, tx pgx.Tx, tenant string) error {
	if _, err := tx.Exec(ctx, `SELECT set_config('warden.tenant_id', $1, true)`, tenant); err != nil {
		return fmt.Errorf("postgres: set tenant: %w", err)
	}
	return nil
}

// View runs fn in a read-only REPEATABLE READ transaction, so every read
// of fn sees one snapshot.
func (s *Store) View(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Reader) error) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	pgTx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("postgres: begin read: %w", err)
	}
	defer func() { _ = pgTx.Rollback(context.Background()) }()
	if err := setTenant(ctx, pgTx, tenant); err != nil {
		return err
	}
	if err := fn(ctx, &readTx{q: pgTx, s: s, tenant: tenant}); err != nil {
		return err
	}
	if err := pgTx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: end read: %w", err)
	}
	return nil
}

// Update runs fn in a READ COMMITTED transaction. The first write locks the
// tenant's counter row, which serializes the tenant's writers.
func (s *Store) Update(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Tx) error) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	pgTx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin write: %w", err)
	}
	defer func() { _ = pgTx.Rollback(context.Background()) }()
	if err := setTenant(ctx, pgTx, tenant); err != nil {
		return err
	}
	tx := &writeTx{readTx: readTx{q: pgTx, s: s, tenant: tenant}}
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.flush(ctx); err != nil {
		return interpretError(err)
	}
	if tx.changed {
		if _, err := pgTx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, notifyPayload(tenant, tx.config)); err != nil {
			return fmt.Errorf("postgres: notify: %w", err)
		}
	}
	if err := pgTx.Commit(ctx); err != nil {
		return interpretError(fmt.Errorf("postgres: commit: %w", err))
	}
	if tx.changed {
		s.notifier.Notify(tenant)
	}
	if tx.config {
		s.configNotifier.Notify(tenant)
	}
	return nil
}

// ChangesSince returns the tenant's change-log entries after the given
// version, or ErrGone when they are no longer all retained.
func (s *Store) ChangesSince(ctx context.Context, tenant string, after int64, limit int) ([]store.Change, error) {
	var out []store.Change
	err := s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.(*readTx).changesSince(ctx, after, limit)
		return err
	})
	return out, err
}

// ChangesCompact drops change-log entries more than keep versions behind the
// newest and moves the tenant's retained floor, store.CompactChunk entries a
// transaction so that the tenant's other writes wait for one chunk at most.
func (s *Store) ChangesCompact(ctx context.Context, tenant string, keep int) error {
	if keep < 0 {
		return fmt.Errorf("postgres: compact: keep must not be negative, got %d", keep)
	}
	target := int64(-1)
	return store.UpdateUntilDone(ctx, s.Update, tenant, func(ctx context.Context, t store.Tx) (done bool, err error) {
		target, done, err = t.(*writeTx).compact(ctx, keep, target)
		return done, err
	})
}

// APIKeyLookup finds a non-revoked API key by the hash of its secret across
// tenants, through the SECURITY DEFINER function warden_api_key_lookup: the
// app role cannot read api_keys without a tenant.
func (s *Store) APIKeyLookup(ctx context.Context, secretHash string) (*store.APIKey, error) {
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `SELECT `+apiKeyColumns+` FROM warden_api_key_lookup($1)`, secretHash))
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("api key lookup: %w", store.ErrNotFound)
		}
		return nil, fmt.Errorf("postgres: api key lookup: %w", err)
	}
	return &k, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

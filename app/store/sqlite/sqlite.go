package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/migrations"
)

// Options configures Open.
type Options struct {
	// Logger receives driver diagnostics; nil discards them.
	Logger *slog.Logger
	// Now is the clock used for timestamps; nil means time.Now.
	Now func() time.Time
	// ReadConns is the size of the reader pool; zero means 4.
	ReadConns int
}

// WithDefaults returns o with zero fields replaced by their defaults.
func (o Options) WithDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	return o
}

// Store is the SQLite implementation of store.Store.
type Store struct {
	writer *sql.DB
	reader *sql.DB
	stmts  map[string]*sql.Stmt
	// readStmts are statements prepared on the reader pool.
	readStmts map[string]*sql.Stmt
	key       []byte
	notifier  *store.Notifier
	// configNotifier signals commits that wrote configuration kinds.
	configNotifier *store.Notifier
	now            func() time.Time
	log            *slog.Logger
	// checkpointer runs WAL checkpoints off the commit path; stop ends it.
	checkpointer *sql.DB
	ckpt         ckptConfig
	// dbFile is the database file, open for the checkpointer's syncs for
	// as long as the store is: closing a descriptor of a file drops every
	// POSIX lock the process holds on it, SQLite's included, so it is
	// closed only after SQLite's connections.
	dbFile *os.File
	// walFile is the write-ahead log, open for its writeback (nil where
	// it could not be opened: the checkpoints then write it out alone).
	walFile *os.File
	// commits counts the writer's commits; the writeback skips a log
	// nothing was appended to.
	commits  atomic.Uint64
	stopCkpt chan struct{}
	stopOnce sync.Once
	ckptDone chan struct{}
	// spans compresses and decompresses span blocks.
	spans *store.SpanCodec
}

var _ store.Store = (*Store)(nil)

// metaContinueKey names the HMAC key of continue tokens in warden_meta.
const metaContinueKey = "continue_hmac_key"

// Open opens (creating it and its parent directory when missing) and
// migrates the database file at path.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	return open(ctx, path, opts, ckptConfig{interval: checkpointInterval, writeback: walWriteback, restartFrames: walRestartFrames, tailFrames: walTailFrames})
}

// open is Open with the checkpoint settings given.
func open(ctx context.Context, path string, opts Options, ckpt ckptConfig) (*Store, error) {
	opts = opts.WithDefaults()
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: database path %q must not contain '?' or '#'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: create directory %s: %w", dir, err)
		}
	}
	// Create the file 0600 before SQLite does (it would use 0644): it holds
	// secrets and key hashes. SQLite gives -wal and -shm the same mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	common := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	writer, err := sql.Open("sqlite", "file:"+path+"?"+common+"&_pragma=temp_store(MEMORY)&_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit("+strconv.Itoa(walSizeLimit)+")&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One writer connection: database/sql queues writers in Go.
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	codec, err := store.NewSpanCodec()
	if err != nil {
		_ = writer.Close()
		return nil, err
	}
	s := &Store{writer: writer, notifier: store.NewNotifier(), configNotifier: store.NewNotifier(), now: opts.Now, log: opts.Logger, spans: codec}
	if err := s.migrate(ctx); err != nil {
		_ = writer.Close()
		return nil, err
	}
	s.stmts = map[string]*sql.Stmt{}
	for _, q := range preparedQueries() {
		st, err := writer.PrepareContext(ctx, q)
		if err != nil {
			_ = writer.Close()
			return nil, fmt.Errorf("sqlite: prepare %q: %w", q, err)
		}
		s.stmts[q] = st
	}
	reader, err := sql.Open("sqlite", "file:"+path+"?"+common+"&_query_only=1")
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("sqlite: open readers of %s: %w", path, err)
	}
	reader.SetMaxOpenConns(opts.ReadConns)
	reader.SetMaxIdleConns(opts.ReadConns)
	reader.SetConnMaxIdleTime(0)
	s.reader = reader
	// The reads of every tool call, prepared once per reader connection
	// (database/sql keeps each connection's compiled form).
	s.readStmts = map[string]*sql.Stmt{}
	for _, q := range []string{qGetObject, qIdempotencyLive} {
		st, err := reader.PrepareContext(ctx, q)
		if err != nil {
			_ = writer.Close()
			_ = reader.Close()
			return nil, fmt.Errorf("sqlite: prepare %q: %w", q, err)
		}
		s.readStmts[q] = st
	}
	// SQLite's automatic checkpoint runs inside the commit that crosses
	// the threshold and stalls every writer queued behind it (the tail of
	// the gateway's latency). Commits never checkpoint here; a connection
	// of its own runs passive checkpoints, which never block writers
	// (checkpoint, below, says how the log still starts over).
	ckptDB, err := sql.Open("sqlite", "file:"+path+"?"+common)
	if err != nil {
		_ = writer.Close()
		_ = reader.Close()
		return nil, fmt.Errorf("sqlite: open checkpointer of %s: %w", path, err)
	}
	ckptDB.SetMaxOpenConns(1)
	dbFile, err := os.Open(path)
	if err != nil {
		_ = ckptDB.Close()
		_ = writer.Close()
		_ = reader.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.dbFile = dbFile
	// The migrations wrote, so the log exists; it stays until the last
	// connection closes. SQLite holds no lock on it (its locks are on
	// -shm), so this descriptor may close whenever.
	if wal, err := os.Open(path + "-wal"); err == nil {
		s.walFile = wal
	} else {
		s.log.Warn("sqlite: open the write-ahead log for its writeback", "err", err)
	}
	s.checkpointer, s.ckpt, s.stopCkpt, s.ckptDone = ckptDB, ckpt, make(chan struct{}), make(chan struct{})
	go s.checkpointLoop()
	return s, nil
}

// checkpointLoop checkpoints the write-ahead log until Close.
func (s *Store) checkpointLoop() {
	defer close(s.ckptDone)
	t := time.NewTicker(s.ckpt.interval)
	defer t.Stop()
	var writeback <-chan time.Time
	if s.ckpt.writeback > 0 && s.walFile != nil {
		wb := time.NewTicker(s.ckpt.writeback)
		defer wb.Stop()
		writeback = wb.C
	}
	var written uint64
	for {
		select {
		case <-s.stopCkpt:
			return
		case <-writeback:
			if n := s.commits.Load(); n != written {
				written = n
				err := startWriteback(s.walFile)
				if err != nil {
					s.log.Warn("sqlite: write-ahead log writeback", "err", err)
				}
				if s.ckpt.wroteBack != nil {
					s.ckpt.wroteBack(err)
				}
			}
		case <-t.C:
			frames, err := s.checkpoint()
			if err != nil {
				s.log.Warn("sqlite: checkpoint", "err", err)
			}
			if s.ckpt.done != nil {
				s.ckpt.done(frames)
			}
		}
	}
}

// Checkpoints and the length of the write-ahead log.
//
// A passive checkpoint on a connection of its own copies the log into the
// database file without ever blocking the writer. But SQLite starts the
// log over from its beginning only when a write transaction begins while
// every frame of the log has been copied, and under steady writes that
// never happens: frames arrive while a pass copies, so a pass is always a
// little behind. The log would grow for as long as the writes go on (at
// 1,000 gateway calls a second, about 70 MB a second), and every pass
// would copy and sync more.
//
// So once the log holds walRestartFrames frames, the checkpointer repeats
// its passive pass while a pass still found more than walTailFrames new
// frames (each pass is shorter than the one before), and then copies the
// last few on the writer connection itself, between two write
// transactions: nothing can be appended meanwhile, the log is wholly
// copied, and the next write starts it over. That last pass holds the
// writers for the time it takes to copy and sync a few dozen frames
// (about a millisecond or two at 1,000 gateway calls a second).
// journal_size_limit then gives the disk back when a burst made the file
// larger than walSizeLimit.
//
// Every walWriteback, if anything was committed, the checkpointer also
// asks the kernel to start writing the log's dirty pages out without
// waiting for them (startWriteback; on Linux sync_file_range, as RocksDB's
// wal_bytes_per_sync does). Otherwise the log's pages stay in the page
// cache until the checkpoint's fsync writes a whole second of them at once:
// at 1,000 gateway calls a second about 70 MB, which took 40-60 ms, and the
// writer's own appends stalled behind it for milliseconds. Written out as
// they come, the fsync finds a few milliseconds' worth left. Durability is
// unchanged: only the fsync makes anything durable.
const (
	checkpointInterval = time.Second
	walWriteback       = 50 * time.Millisecond
	walRestartFrames   = 4096 // 16 MiB of 4 KiB pages
	walTailFrames      = 64
	walCatchUpPasses   = 4
	walSizeLimit       = 64 << 20
)

// ckptConfig holds the checkpoint settings (tests change them).
type ckptConfig struct {
	interval, writeback       time.Duration
	restartFrames, tailFrames int
	// done, when set, is called after every checkpoint with the number of
	// frames the log held before its last pass.
	done func(frames int)
	// wroteBack, when set, is called after every writeback of the log.
	wroteBack func(err error)
}

// checkpoint runs one round as described above and returns the number of
// frames the log held before its last pass.
func (s *Store) checkpoint() (int, error) {
	ctx := context.Background()
	logged, copied, err := passiveCheckpoint(ctx, s.checkpointer)
	if err != nil || logged < s.ckpt.restartFrames {
		return logged, err
	}
	for range walCatchUpPasses {
		before := copied
		if logged, copied, err = passiveCheckpoint(ctx, s.checkpointer); err != nil {
			return logged, err
		}
		if copied-before <= s.ckpt.tailFrames {
			break
		}
	}
	// The writer pass ends with a sync of the database file, which would
	// write out everything the passes before it copied while the writers
	// wait; synced here first, the writers wait for a few frames' worth.
	if err := s.dbFile.Sync(); err != nil {
		return logged, fmt.Errorf("sync database file: %w", err)
	}
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return logged, fmt.Errorf("writer connection: %w", err)
	}
	defer func() { _ = conn.Close() }()
	logged, _, err = passiveCheckpoint(ctx, conn)
	return logged, err
}

// passiveCheckpoint runs a passive checkpoint on q and returns the frames
// in the log and how many of them are copied into the database file.
func passiveCheckpoint(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (logged, copied int, err error) {
	var busy int
	if err := q.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logged, &copied); err != nil {
		return 0, 0, err
	}
	return logged, copied, nil
}

// migrate applies the embedded migrations not yet recorded and makes sure
// the continue-token key exists. BEGIN IMMEDIATE serializes two processes
// opening the same file.
func (s *Store) migrate(ctx context.Context) error {
	files, err := fs.Glob(migrations.FS, "sqlite/*.up.sql")
	if err != nil {
		return fmt.Errorf("sqlite: list migrations: %w", err)
	}
	sort.Strings(files)
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin migration: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("sqlite: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			return fmt.Errorf("sqlite: read schema_migrations: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("sqlite: read schema_migrations: %w", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return fmt.Errorf("sqlite: migration %s is not numbered: %w", name, err)
		}
		if applied[v] {
			continue
		}
		body, err := fs.ReadFile(migrations.FS, f)
		if err != nil {
			return fmt.Errorf("sqlite: read migration %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("sqlite: apply migration %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			v, name, s.now().UnixMicro()); err != nil {
			return fmt.Errorf("sqlite: record migration %s: %w", name, err)
		}
		s.log.Info("applied migration", "driver", "sqlite", "migration", name)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if _, err := tx.ExecContext(ctx, `INSERT INTO warden_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
		metaContinueKey, key); err != nil {
		return fmt.Errorf("sqlite: store continue key: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT value FROM warden_meta WHERE key = ?`, metaContinueKey).Scan(&s.key); err != nil {
		return fmt.Errorf("sqlite: read continue key: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit migration: %w", err)
	}
	return nil
}

// Close closes both connection pools and stops the listeners.
func (s *Store) Close() error {
	s.notifier.Close()
	s.configNotifier.Close()
	s.stopOnce.Do(func() { close(s.stopCkpt) })
	<-s.ckptDone
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	for _, st := range s.readStmts {
		errs = append(errs, st.Close())
	}
	// A final checkpoint folds the log into the file.
	if _, err := s.checkpointer.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		s.log.Warn("sqlite: final checkpoint", "err", err)
	}
	errs = append(errs, s.checkpointer.Close(), s.reader.Close(), s.writer.Close())
	s.spans.Close()
	if s.walFile != nil {
		errs = append(errs, s.walFile.Close())
	}
	return errors.Join(append(errs, s.dbFile.Close())...)
}

// Listen calls fn in-process, on a goroutine of its own, after every commit
// that appended to a tenant's change log.
func (s *Store) Listen(fn func(tenant string)) (stop func()) {
	return s.notifier.Listen(fn)
}

// ListenConfig calls fn in-process, on a goroutine of its own, after every
// commit that wrote a resource of a configuration kind (any kind but the
// runtime records of resource.IsRecordKind).
func (s *Store) ListenConfig(fn func(tenant string)) (stop func()) {
	return s.configNotifier.Listen(fn)
}

// ConfigGeneration counts the configuration commits of tenant this store
// has seen; see store.Store.
func (s *Store) ConfigGeneration(tenant string) uint64 {
	return s.configNotifier.Generation(tenant)
}

// View runs fn in a read transaction on the reader pool; WAL gives it a
// consistent snapshot from its first read.
func (s *Store) View(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Reader) error) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	sqlTx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: begin read: %w", err)
	}
	defer func() { _ = sqlTx.Rollback() }()
	if err := fn(ctx, &readTx{q: &stmtQuerier{tx: sqlTx, base: s.readStmts}, s: s, tenant: tenant}); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlite: end read: %w", err)
	}
	return nil
}

// Update runs fn in a write transaction on the writer connection. It commits
// when fn returns nil and rolls back otherwise.
func (s *Store) Update(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Tx) error) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	sqlTx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin write: %w", err)
	}
	defer func() { _ = sqlTx.Rollback() }()
	q := &stmtQuerier{tx: sqlTx, base: s.stmts, local: map[string]*sql.Stmt{}}
	tx := &writeTx{readTx: readTx{q: q, s: s, tenant: tenant}}
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.flush(ctx); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	s.commits.Add(1)
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
		return fmt.Errorf("sqlite: compact: keep must not be negative, got %d", keep)
	}
	target := int64(-1)
	return store.UpdateUntilDone(ctx, s.Update, tenant, func(ctx context.Context, t store.Tx) (done bool, err error) {
		target, done, err = t.(*writeTx).compact(ctx, keep, target)
		return done, err
	})
}

// APIKeyLookup finds a non-revoked API key by the hash of its secret, across
// tenants.
func (s *Store) APIKeyLookup(ctx context.Context, secretHash string) (*store.APIKey, error) {
	row := s.reader.QueryRowContext(ctx, `SELECT id, tenant_id, name, secret_hash, namespace, role, agent,
		created_at, expires_at, revoked_at, last_used_at FROM api_keys WHERE secret_hash = ? AND revoked_at IS NULL`, secretHash)
	k, err := scanAPIKey(row)
	if err != nil {
		return nil, interpretError(fmt.Errorf("sqlite: api key lookup: %w", err))
	}
	return k, nil
}

func microPtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}

func timePtrMicro(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

// interpretError maps driver errors onto the store sentinels.
func interpretError(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %w", store.ErrAlreadyExists, err)
		}
	}
	return err
}

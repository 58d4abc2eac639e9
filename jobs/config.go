package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
)

// Defaults of Config. See doc.go for how they were chosen.
const (
	// DefaultFetchCooldown is the minimum time between two fetches of one
	// queue by one Queue (River's own default is 100 ms). It bounds how
	// soon a job inserted right after a fetch is picked up.
	DefaultFetchCooldown = 20 * time.Millisecond
	// DefaultFetchPollInterval is how often a queue is fetched when no
	// insert notification arrives (River's own default is 1 s). It bounds
	// the lateness of scheduled jobs, such as approval expiry, and the
	// latency of jobs inserted by another replica whose notification was
	// lost.
	DefaultFetchPollInterval = 200 * time.Millisecond
	// DefaultMaxWorkers is the concurrency of the default queue when
	// Config.Queues is empty.
	DefaultMaxWorkers = 10
	// DefaultRescueStuckJobsAfter is how long a job may stay running
	// before River's leader rescues it as left by a dead process (River's
	// own default is an hour). A job is never rescued before its own
	// timeout either. Every Warden job is safe to run twice.
	DefaultRescueStuckJobsAfter = time.Minute
)

// Config configures a Queue. Only Workers is needed to work jobs; a Queue
// without Workers can insert jobs but not Start.
type Config struct {
	// FetchCooldown is the minimum time between two fetches of a queue.
	// Zero means DefaultFetchCooldown, or FetchPollInterval when that is
	// smaller.
	FetchCooldown time.Duration
	// FetchPollInterval is the time between two fetches of a queue when
	// no insert notification arrives. Zero means DefaultFetchPollInterval,
	// or FetchCooldown when that is larger. It must not be smaller than
	// FetchCooldown.
	FetchPollInterval time.Duration
	// JobTimeout is how long a job may run before its context is
	// cancelled. Zero means River's default (1 minute); -1 means no
	// timeout. Workers can override it with Timeout.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a job may stay running before it is
	// taken for the job of a dead process and run again (once its own
	// timeout has passed too). Zero means DefaultRescueStuckJobsAfter, or
	// JobTimeout when that is longer.
	RescueStuckJobsAfter time.Duration
	// Logger receives River's diagnostics; nil discards them.
	Logger *slog.Logger
	// MaxAttempts is how many times a failing job is tried before it is
	// discarded, unless its InsertOpts say otherwise. Zero means River's
	// default (25). Jobs with side effects that must not repeat set
	// InsertOpts.MaxAttempts to 1 or make the work idempotent.
	MaxAttempts int
	// PeriodicJobs are inserted on a schedule by whichever Queue is the
	// leader among those sharing the database.
	PeriodicJobs []*river.PeriodicJob
	// Queues names the queues this Queue works, with their concurrency.
	// Empty means river.QueueDefault with DefaultMaxWorkers when Workers
	// is set, and no queue (insert only) when it is not.
	Queues map[string]river.QueueConfig
	// TestOnly makes River skip the random delay before its maintenance
	// services (leader duties such as scheduling and cleaning) start, so
	// that tests start and stop quickly. Never set it in production.
	TestOnly bool
	// Workers holds the workers, registered with river.AddWorker.
	Workers *river.Workers
	// NoMigrate (Postgres) checks that River's schema is migrated, and
	// fails naming the missing migrations, rather than migrating it and
	// granting it to the application role: for processes that must not
	// change the schema (`warden serve` without --migrate).
	NoMigrate bool
}

// WithDefaults returns c with zero fields replaced by their defaults.
func (c Config) WithDefaults() Config {
	if c.FetchCooldown == 0 {
		c.FetchCooldown = DefaultFetchCooldown
		if c.FetchPollInterval > 0 {
			c.FetchCooldown = min(c.FetchCooldown, c.FetchPollInterval)
		}
	}
	if c.FetchPollInterval == 0 {
		c.FetchPollInterval = max(DefaultFetchPollInterval, c.FetchCooldown)
	}
	if c.RescueStuckJobsAfter == 0 {
		c.RescueStuckJobsAfter = max(DefaultRescueStuckJobsAfter, c.JobTimeout)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if len(c.Queues) == 0 && c.Workers != nil {
		c.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: DefaultMaxWorkers}}
	}
	return c
}

// Validate reports the first invalid field of c, by name.
func (c Config) Validate() error {
	switch {
	case c.FetchCooldown < 0:
		return fmt.Errorf("jobs: Config.FetchCooldown must not be negative, got %s", c.FetchCooldown)
	case c.FetchPollInterval < 0:
		return fmt.Errorf("jobs: Config.FetchPollInterval must not be negative, got %s", c.FetchPollInterval)
	case c.FetchPollInterval != 0 && c.FetchPollInterval < c.FetchCooldown:
		return fmt.Errorf("jobs: Config.FetchPollInterval (%s) must not be smaller than Config.FetchCooldown (%s)",
			c.FetchPollInterval, c.FetchCooldown)
	case c.JobTimeout < -1:
		return fmt.Errorf("jobs: Config.JobTimeout must be positive, zero or -1, got %s", c.JobTimeout)
	case c.RescueStuckJobsAfter < 0:
		return fmt.Errorf("jobs: Config.RescueStuckJobsAfter must not be negative, got %s", c.RescueStuckJobsAfter)
	case c.RescueStuckJobsAfter != 0 && c.JobTimeout > 0 && c.RescueStuckJobsAfter < c.JobTimeout:
		return fmt.Errorf("jobs: Config.RescueStuckJobsAfter (%s) must not be smaller than Config.JobTimeout (%s)",
			c.RescueStuckJobsAfter, c.JobTimeout)
	case c.MaxAttempts < 0:
		return fmt.Errorf("jobs: Config.MaxAttempts must not be negative, got %d", c.MaxAttempts)
	case len(c.Queues) > 0 && c.Workers == nil:
		return errors.New("jobs: Config.Queues is set but Config.Workers is nil; a queue needs workers")
	case len(c.PeriodicJobs) > 0 && c.Workers == nil:
		return errors.New("jobs: Config.PeriodicJobs is set but Config.Workers is nil; periodic jobs need workers")
	}
	return nil
}

// riverConfig is the River client configuration of c, which must have had
// WithDefaults applied.
func (c Config) riverConfig() *river.Config {
	return &river.Config{
		FetchCooldown:        c.FetchCooldown,
		FetchPollInterval:    c.FetchPollInterval,
		JobTimeout:           c.JobTimeout,
		Logger:               slog.New(warnOnly{c.Logger.Handler()}),
		MaxAttempts:          c.MaxAttempts,
		PeriodicJobs:         c.PeriodicJobs,
		Queues:               c.Queues,
		RescueStuckJobsAfter: c.RescueStuckJobsAfter,
		TestOnly:             c.TestOnly,
		Workers:              c.Workers,
	}
}

// migrateLogger silences River's migrator: Open logs each migration it
// applies once itself ("applied River migration", with its name), which
// River's own line would otherwise repeat.
func migrateLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// warnOnly passes on River's warnings and errors and drops its routine
// information (client started, job counts every few seconds), which would
// otherwise fill the log of an idle server.
type warnOnly struct{ slog.Handler }

// Enabled reports whether a record of level l is passed on.
func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

// WithAttrs keeps the filter on the derived handler.
func (h warnOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnOnly{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the filter on the derived handler.
func (h warnOnly) WithGroup(name string) slog.Handler { return warnOnly{h.Handler.WithGroup(name)} }

package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Config.
const (
	// DefaultTimeout is the wall-clock limit of a Spec without one; it
	// matches the default of a Tool's spec.os.timeout.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxOutputBytes caps stdout and stderr of a Spec without a cap.
	DefaultMaxOutputBytes = 1 << 20
)

// Config configures a Runner. The zero value works once WithDefaults fills
// it in, provided bwrap is installed and the executable calls InitMain.
type Config struct {
	// BwrapPath is the bubblewrap binary, a path or a name looked up in
	// PATH; default "bwrap".
	BwrapPath string
	// InitPath is the executable bound into every sandbox as its init stub;
	// it must call IsInit/InitMain first thing in main. Default: the running
	// executable (os.Executable).
	InitPath string
	// TempDir is where each run's scratch and /tmp directories are made
	// and removed again; default os.TempDir(). (The egress proxy's socket
	// always goes to os.TempDir(), as socket paths must stay short.)
	TempDir string
	// DefaultTimeout applies to a Spec without Timeout; default
	// DefaultTimeout.
	DefaultTimeout time.Duration
	// DefaultMaxOutputBytes applies to a Spec without MaxOutputBytes;
	// default DefaultMaxOutputBytes.
	DefaultMaxOutputBytes int64
	// Logger receives run metadata (command name, exit code, duration,
	// sizes, egress decisions), never stdin, stdout or stderr. Default:
	// discard.
	Logger *slog.Logger
	// Now is the clock for Result.Duration; default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.BwrapPath == "" {
		c.BwrapPath = "bwrap"
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.DefaultMaxOutputBytes == 0 {
		c.DefaultMaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports every invalid field of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.DefaultTimeout < 0 {
		errs = append(errs, fmt.Errorf("defaultTimeout: must not be negative, got %s", c.DefaultTimeout))
	}
	if c.DefaultMaxOutputBytes < 0 {
		errs = append(errs, fmt.Errorf("defaultMaxOutputBytes: must not be negative, got %d", c.DefaultMaxOutputBytes))
	}
	if len(errs) > 0 {
		return fmt.Errorf("sandbox: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

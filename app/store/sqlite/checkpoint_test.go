package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// Under writes that never pause, the write-ahead log must still start over:
// a passive checkpoint alone is always a few frames behind, and the log
// would grow for as long as the writes go on.
func TestCheckpointRestartsLogUnderSteadyWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const restart = 64
	frames := make(chan int, 1024)
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := open(ctx, path, Options{}, ckptConfig{
		interval: 2 * time.Millisecond, restartFrames: restart, tailFrames: 8,
		done: func(n int) {
			select {
			case frames <- n:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		value := strings.Repeat("x", 3000)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.writer.ExecContext(ctx, `INSERT INTO warden_meta (key, value) VALUES (?, ?)
				ON CONFLICT (key) DO UPDATE SET value = excluded.value`, fmt.Sprint("k", i%200), fmt.Sprint(i, value)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	// SQLite counts the times the log started over in the log file's
	// header (the checkpoint sequence number, bytes 12 to 15).
	restarts := func() uint32 {
		f, err := os.Open(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		var h [16]byte
		if _, err := io.ReadFull(f, h[:]); err != nil {
			return 0
		}
		return binary.BigEndian.Uint32(h[12:])
	}
	rounds := 0
	for range frames {
		if rounds++; restarts() >= 10 {
			return
		}
		if rounds == 1000 {
			t.Fatalf("after %d checkpoints under steady writes the log started over %d times", rounds, restarts())
		}
	}
}

// The log is written back while the writes go on, and only after a commit:
// an idle store makes no system calls for it.
func TestWritebackFollowsCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wrote := make(chan error, 16)
	s, err := open(ctx, filepath.Join(t.TempDir(), "warden.db"), Options{}, ckptConfig{
		interval: time.Hour, writeback: time.Millisecond, restartFrames: walRestartFrames, tailFrames: walTailFrames,
		wroteBack: func(err error) { wrote <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if s.walFile == nil {
		t.Fatal("the write-ahead log is not open for its writeback")
	}
	// A commit through Update, the store's way: it appends to the log.
	commit := func(int) {
		t.Helper()
		if err := s.Update(ctx, "t1", func(ctx context.Context, tx store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		commit(i)
		select {
		case err := <-wrote:
			if err != nil {
				t.Fatalf("writeback after commit %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no writeback after commit %d", i)
		}
	}
	// Idle: every tick passes without a writeback. Ticks are not
	// observable, so give the ticker a hundred of them.
	idle := time.NewTimer(100 * time.Millisecond)
	defer idle.Stop()
	select {
	case <-wrote:
		t.Fatal("a writeback without a commit since the last one")
	case <-idle.C:
	}
}

// A database opened again (its log folded in and removed at the last
// close) still gets its log written back.
func TestWritebackAfterReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "warden.db")
	for i := range 2 {
		s, err := Open(context.Background(), path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s.walFile == nil {
			t.Errorf("open %d: the write-ahead log is not open for its writeback", i+1)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package sqlite

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages to disk
// and returns without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE): it makes nothing durable, but the next fsync
// finds most of the pages written or on their way.
func startWriteback(f *os.File) error {
	return unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}

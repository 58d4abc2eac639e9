package sandbox

import "bytes"

// cappedBuffer keeps the first max bytes written to it and discards the
// rest, so a chatty command neither blocks on a full pipe nor grows the
// gateway's memory. os/exec writes to it from one goroutine and Wait orders
// that before the reads, so it needs no lock.
type cappedBuffer struct {
	buf       bytes.Buffer
	max       int64
	truncated bool
}

// Write implements io.Writer; it never fails, so the command's output pipe
// is always drained.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - int64(b.buf.Len())
	if int64(len(p)) > room {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

// Bytes returns what was kept.
func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }

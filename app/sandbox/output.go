package sandbox

import (
	"bytes"
	"sync"
)

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

// tailBuffer keeps the last max bytes written to it: the stderr of a
// long-lived process, where the newest lines say why it ended. It is safe
// for concurrent use (os/exec writes while callers read).
type tailBuffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped bool // older bytes were discarded
}

// Write implements io.Writer; it never fails, so the pipe is always drained.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(p) > b.max {
		p = p[len(p)-b.max:]
		b.dropped = true
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.dropped = true
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// redacted returns a copy of what is kept with the values masked; a
// process may still be writing, so a value's start at the end is masked
// too.
func (b *tailBuffer) redacted(values []string) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return redact(b.buf, values, b.dropped, true)
}

// redactedMarker replaces every masked run of bytes.
const redactedMarker = "[REDACTED]"

// minFragment is the shortest piece of a value masked where the output
// was cut (the start of a value at the end, its end at the start):
// shorter pieces are too common in ordinary text to mask.
const minFragment = 4

// redact returns b with every occurrence of each value replaced by
// redactedMarker; overlapping and adjacent occurrences become one marker.
// headCut says that bytes before b were dropped (so b may begin inside a
// value), tailCut that bytes after it may follow (so b may end inside
// one): such fragments are masked too, when at least minFragment long.
// b is not modified.
func redact(b []byte, values []string, headCut, tailCut bool) []byte {
	var mask []bool
	mark := func(from, to int) {
		if mask == nil {
			mask = make([]bool, len(b))
		}
		for i := from; i < to; i++ {
			mask[i] = true
		}
	}
	for _, s := range values {
		v := []byte(s)
		if len(v) == 0 {
			continue
		}
		for i := 0; i < len(b); {
			j := bytes.Index(b[i:], v)
			if j < 0 {
				break
			}
			mark(i+j, i+j+len(v))
			i += j + 1
		}
		for k := min(len(v)-1, len(b)); headCut && k >= minFragment; k-- {
			if bytes.HasPrefix(b, v[len(v)-k:]) {
				mark(0, k)
				break
			}
		}
		for k := min(len(v)-1, len(b)); tailCut && k >= minFragment; k-- {
			if bytes.HasSuffix(b, v[:k]) {
				mark(len(b)-k, len(b))
				break
			}
		}
	}
	if mask == nil {
		return bytes.Clone(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if !mask[i] {
			out = append(out, b[i])
			continue
		}
		out = append(out, redactedMarker...)
		for i+1 < len(b) && mask[i+1] {
			i++
		}
	}
	return out
}

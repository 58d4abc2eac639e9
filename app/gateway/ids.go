package gateway

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"time"
)

// crockford is Crockford's base32 alphabet in lower case: names stay valid
// DNS-1123 labels.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// newSuffix returns a 26-character, time-ordered, random identifier (the
// ULID layout: 48 bits of milliseconds, 80 random bits), so that names
// sort by creation time.
func newSuffix(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails
	// 128 bits as 26 base32 digits, the first carrying 3 bits.
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// Name prefixes: a call and its approval share the suffix.
const (
	callPrefix     = "tc-"
	approvalPrefix = "ap-"
)

// ApprovalName returns the name of the Approval of call.
func ApprovalName(call string) string {
	return approvalPrefix + strings.TrimPrefix(call, callPrefix)
}

// CallName returns the name of the call an approval is for, when the
// approval was created by the gateway.
func CallName(approval string) string {
	if suffix, ok := strings.CutPrefix(approval, approvalPrefix); ok && suffix != "" {
		return callPrefix + suffix
	}
	return ""
}

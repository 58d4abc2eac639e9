package audit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Checkpoint stands for the records that retention removed from the start
// of a tenant's chain: the sequence number, hash and time of the last
// record removed, sealed under the installation's master key. A verifier
// that trusts the seal starts the chain after Seq, from Hash, instead of
// from record 1, so the chain still verifies after a cut; changing any
// field of the checkpoint, or moving it to another tenant, breaks the seal.
type Checkpoint struct {
	Tenant string    `json:"tenant"`
	Seq    int64     `json:"seq"`
	Hash   string    `json:"hash"`
	Time   time.Time `json:"time"`
	// CutAt is when the records up to Seq were removed.
	CutAt time.Time `json:"cutAt"`
	// Seal is the sealed payload (Sealer.Seal of Payload).
	Seal []byte `json:"-"`
}

// Sealer seals and opens values under the installation's master key, as
// secret.Keyring does (authenticated encryption bound to a context).
type Sealer interface {
	Seal(plaintext, context []byte) ([]byte, error)
	Open(sealed, context []byte) ([]byte, error)
}

// Payload is the canonical encoding of the checkpoint's fields, Seal
// aside: each field length-prefixed, times in Unix microseconds.
func (c Checkpoint) Payload() []byte {
	var b []byte
	for _, s := range []string{"warden.dev/AuditCheckpoint/v1", c.Tenant, c.Hash} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(c.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Time.UnixMicro()))
	return binary.BigEndian.AppendUint64(b, uint64(c.CutAt.UnixMicro()))
}

func checkpointContext(tenant string) []byte {
	return []byte("warden.dev/AuditCheckpoint\x00" + tenant)
}

// SealCheckpoint returns c with its Seal set and its times in the stored
// form (UTC, microseconds).
func SealCheckpoint(s Sealer, c Checkpoint) (Checkpoint, error) {
	c.Time, c.CutAt = c.Time.UTC().Truncate(time.Microsecond), c.CutAt.UTC().Truncate(time.Microsecond)
	sealed, err := s.Seal(c.Payload(), checkpointContext(c.Tenant))
	if err != nil {
		return c, fmt.Errorf("seal audit checkpoint: %w", err)
	}
	c.Seal = sealed
	return c, nil
}

// ErrCheckpointSeal is returned by CheckCheckpoint when the seal does not
// open or does not match the checkpoint's fields.
var ErrCheckpointSeal = errors.New("the audit checkpoint's seal does not match it: the checkpoint was changed or forged")

// CheckCheckpoint reports whether c's seal opens under s and holds exactly
// c's fields.
func CheckCheckpoint(s Sealer, c Checkpoint) error {
	if len(c.Seal) == 0 {
		return ErrCheckpointSeal
	}
	pt, err := s.Open(c.Seal, checkpointContext(c.Tenant))
	if err != nil || !bytes.Equal(pt, c.Payload()) {
		return ErrCheckpointSeal
	}
	return nil
}

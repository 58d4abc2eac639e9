// Package audit defines the audit record that every API call leaves behind and
// the hash chain that makes the per-tenant audit log tamper-evident.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Record is one audit log entry.
type Record struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	Tenant    string    `json:"tenant"`
	Actor     string    `json:"actor"`
	Verb      string    `json:"verb"`
	Namespace string    `json:"namespace,omitempty"`
	Resource  string    `json:"resource,omitempty"`
	Outcome   string    `json:"outcome"`
	// Policy is the effective policy of the call, e.g. "role:admin" or
	// "<policy>@<version>".
	Policy   string `json:"policy,omitempty"`
	Reason   string `json:"reason,omitempty"`
	PrevHash string `json:"prevHash"`
	Hash     string `json:"hash"`
}

// Outcomes.
const (
	OutcomeAllowed = "allowed"
	OutcomeDenied  = "denied"
	OutcomeFailed  = "failed"
)

// ComputeHash returns the chain hash of r: SHA-256 over the previous hash and
// the canonical JSON of every other field. Drivers call it when appending and
// verifiers call it when walking the chain.
func ComputeHash(r Record) string {
	r.Hash = ""
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	b, _ := json.Marshal(r) // a struct of strings, ints and a time cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Verify walks records in chain order and returns the index of the first
// record whose hash or link is wrong, or -1 when the chain holds.
func Verify(records []Record, prevHash string) int {
	for i, r := range records {
		if r.PrevHash != prevHash || ComputeHash(r) != r.Hash {
			return i
		}
		prevHash = r.Hash
	}
	return -1
}

// Problem is one defect found in an audit chain.
type Problem struct {
	// Seq is the sequence number where the defect shows.
	Seq int64 `json:"seq"`
	// Kind is "modified", "missing", "reordered", "truncated" or
	// "checkpoint".
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Problem kinds.
const (
	ProblemModified  = "modified"
	ProblemMissing   = "missing"
	ProblemReordered = "reordered"
	ProblemTruncated = "truncated"
	// ProblemCheckpoint is a checkpoint whose seal does not hold.
	ProblemCheckpoint = "checkpoint"
)

// Report is the outcome of verifying a tenant's whole chain.
type Report struct {
	OK      bool  `json:"ok"`
	Records int   `json:"records"`
	Head    int64 `json:"head"`
	// Checkpoint is where the chain starts when retention removed its
	// oldest records; absent when the chain starts at record 1.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Problems   []Problem   `json:"problems"`
}

// VerifyChain checks records as read in sequence order: every record's hash
// must match its content (else it was modified), sequence numbers must run
// without gaps from 1 (else records are missing), and every record must link
// to the hash of the one before it (else the order was changed). head is the
// sequence number of the newest record the tenant ever appended, kept apart
// from the log, so that removing the newest records is caught too (0 when
// unknown).
func VerifyChain(records []Record, head int64) Report {
	return VerifyChainFrom(nil, nil, records, head)
}

// VerifyChainFrom is VerifyChain for a chain that retention cut: with a
// checkpoint cp, the records must start at cp.Seq+1 and link to cp.Hash,
// and the checkpoint's seal must open under s (else the problem is
// "checkpoint"). A nil cp is VerifyChain.
func VerifyChainFrom(s Sealer, cp *Checkpoint, records []Record, head int64) Report {
	rep := Report{Records: len(records), Head: head, Checkpoint: cp, Problems: []Problem{}}
	var prev *Record
	if cp != nil {
		if s == nil || CheckCheckpoint(s, *cp) != nil {
			rep.Problems = append(rep.Problems, Problem{Seq: cp.Seq, Kind: ProblemCheckpoint, Message: ErrCheckpointSeal.Error()})
		}
		prev = &Record{Seq: cp.Seq, Hash: cp.Hash}
	}
	for i := range records {
		r := records[i]
		want := int64(1)
		if prev != nil {
			want = prev.Seq + 1
		}
		switch {
		case r.Seq > want:
			msg := fmt.Sprintf("record %d is missing", want)
			if r.Seq-1 > want {
				msg = fmt.Sprintf("records %d to %d are missing", want, r.Seq-1)
			}
			rep.Problems = append(rep.Problems, Problem{Seq: want, Kind: ProblemMissing, Message: msg})
		case r.Seq < want:
			rep.Problems = append(rep.Problems, Problem{Seq: r.Seq, Kind: ProblemReordered,
				Message: fmt.Sprintf("record %d appears after record %d", r.Seq, want-1)})
		}
		if ComputeHash(r) != r.Hash {
			rep.Problems = append(rep.Problems, Problem{Seq: r.Seq, Kind: ProblemModified,
				Message: fmt.Sprintf("record %d does not match its hash: it was changed after it was written", r.Seq)})
		}
		prevHash := ""
		if prev != nil {
			prevHash = prev.Hash
		}
		if r.Seq == want && r.PrevHash != prevHash {
			rep.Problems = append(rep.Problems, Problem{Seq: r.Seq, Kind: ProblemReordered,
				Message: fmt.Sprintf("record %d does not link to record %d: records were reordered or replaced", r.Seq, want-1)})
		}
		prev = &records[i]
	}
	last := int64(0)
	if prev != nil {
		last = prev.Seq
	}
	if head > last {
		rep.Problems = append(rep.Problems, Problem{Seq: last + 1, Kind: ProblemTruncated,
			Message: fmt.Sprintf("the log ends at record %d but %d records were written: the newest were removed", last, head)})
	}
	rep.OK = len(rep.Problems) == 0
	return rep
}

// Package audit defines the audit record that every API call leaves behind and
// the hash chain that makes the per-tenant audit log tamper-evident.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

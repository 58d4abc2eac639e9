package store

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/resource"
)

// This file holds the write semantics every driver shares, so that SQLite
// and Postgres cannot disagree on uid, generation, no-op detection or
// preconditions. Drivers only allocate the resource version and persist.

// NewUID returns a random RFC 4122 version 4 UUID.
func NewUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// FormatVersion renders a resource version as the decimal string clients see.
func FormatVersion(rv int64) string { return strconv.FormatInt(rv, 10) }

// ParseVersion parses a resource version rendered by FormatVersion. The empty
// string parses as 0.
func ParseVersion(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("resource version %q is not a non-negative integer", s)
	}
	return v, nil
}

// CheckTenant returns ErrNoTenant for an empty tenant.
func CheckTenant(tenant string) error {
	if tenant == "" {
		return ErrNoTenant
	}
	return nil
}

// CheckKey rejects a key without kind or name.
func CheckKey(key resource.Key) error {
	if key.Kind == "" || key.Name == "" {
		return fmt.Errorf("resource key %q: kind and name are required", key.String())
	}
	return nil
}

// PrepareCreate returns the object to store for a create at version rv: a
// copy of obj with a fresh uid, generation 1, the creation timestamp (RFC
// 3339, UTC, whole seconds) and the version. A status given on create is
// kept as the initial status (system writers create records with a phase).
func PrepareCreate(obj *resource.Object, rv int64, now time.Time) (*resource.Object, error) {
	if obj == nil {
		return nil, fmt.Errorf("create: nil object")
	}
	if err := CheckKey(obj.Key()); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	out, err := jsonCopy(obj)
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	out.Metadata.UID = NewUID()
	out.Metadata.Generation = 1
	out.Metadata.ResourceVersion = FormatVersion(rv)
	out.Metadata.CreationTimestamp = now.UTC().Format(time.RFC3339)
	return out, nil
}

// PrepareUpdate merges obj into stored: spec, labels and annotations are
// replaced, everything else (status, uid, creation timestamp) is kept. It
// checks the resourceVersion (and uid) preconditions of obj and returns
// ErrConflict when they are stale. changed is false when the update would
// change nothing; the caller then returns stored as is. When changed, the
// caller sets the new resource version on out.
func PrepareUpdate(stored, obj *resource.Object) (out *resource.Object, changed bool, err error) {
	if err := checkPrecondition(stored, obj.Metadata.ResourceVersion); err != nil {
		return nil, false, err
	}
	if obj.Metadata.UID != "" && obj.Metadata.UID != stored.Metadata.UID {
		return nil, false, fmt.Errorf("update %s: uid %s does not match the stored uid: %w", stored.Key(), obj.Metadata.UID, ErrConflict)
	}
	in, err := jsonCopy(obj)
	if err != nil {
		return nil, false, fmt.Errorf("update: %w", err)
	}
	specChanged := !jsonEqual(stored.Spec, in.Spec)
	metaChanged := !jsonEqual(stored.Metadata.Labels, in.Metadata.Labels) ||
		!jsonEqual(stored.Metadata.Annotations, in.Metadata.Annotations)
	if !specChanged && !metaChanged {
		return stored, false, nil
	}
	out = stored.DeepCopy()
	out.Spec = in.Spec
	out.Metadata.Labels = in.Metadata.Labels
	out.Metadata.Annotations = in.Metadata.Annotations
	if specChanged {
		out.Metadata.Generation++
	}
	return out, true, nil
}

// PrepareUpdateStatus replaces the status of stored, checking the
// resourceVersion precondition. changed is false when the status is equal
// to the stored one. Generation never moves.
func PrepareUpdateStatus(stored *resource.Object, status map[string]any, resourceVersion string) (out *resource.Object, changed bool, err error) {
	if err := checkPrecondition(stored, resourceVersion); err != nil {
		return nil, false, err
	}
	in, err := jsonCopy(&resource.Object{Status: status})
	if err != nil {
		return nil, false, fmt.Errorf("update status: %w", err)
	}
	if jsonEqual(stored.Status, in.Status) {
		return stored, false, nil
	}
	out = stored.DeepCopy()
	out.Status = in.Status
	return out, true, nil
}

// PrepareDelete checks the resourceVersion precondition of a delete and
// returns the last state to record in the DELETED change, at version rv.
func PrepareDelete(stored *resource.Object, resourceVersion string, rv int64) (*resource.Object, error) {
	if err := checkPrecondition(stored, resourceVersion); err != nil {
		return nil, err
	}
	out := stored.DeepCopy()
	out.Metadata.ResourceVersion = FormatVersion(rv)
	return out, nil
}

func checkPrecondition(stored *resource.Object, resourceVersion string) error {
	if resourceVersion != "" && resourceVersion != stored.Metadata.ResourceVersion {
		return fmt.Errorf("%s: resourceVersion %s is stale (stored %s): %w",
			stored.Key(), resourceVersion, stored.Metadata.ResourceVersion, ErrConflict)
	}
	return nil
}

// normalize turns empty maps into nil so that {} and absent compare equal.
func normalize(o *resource.Object) {
	if len(o.Spec) == 0 {
		o.Spec = nil
	}
	if len(o.Status) == 0 {
		o.Status = nil
	}
	if len(o.Metadata.Labels) == 0 {
		o.Metadata.Labels = nil
	}
	if len(o.Metadata.Annotations) == 0 {
		o.Metadata.Annotations = nil
	}
}

// jsonCopy returns a normalized copy of o as it will read back from storage
// (numbers become float64 and so on), so that what a write returns equals
// what a later read returns.
func jsonCopy(o *resource.Object) (*resource.Object, error) {
	if out, ok := normalObject(o); ok {
		return out, nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", o.Key(), err)
	}
	var out resource.Object
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", o.Key(), err)
	}
	normalize(&out)
	return &out, nil
}

// jsonEqual compares two values by their JSON encoding (maps encode with
// sorted keys, so this is canonical for the generic JSON values we store).
func jsonEqual[T any](a, b T) bool {
	if eq, ok := normalEqual(any(a), any(b)); ok {
		return eq
	}
	ab, errA := json.Marshal(a)
	bb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ab, bb)
}

// EncodeObject renders an object as stored in the drivers' JSON columns.
func EncodeObject(o *resource.Object) ([]byte, error) {
	b, err := resource.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", o.Key(), err)
	}
	return b, nil
}

// EncodeLabels renders labels as stored in the drivers' labels columns.
func EncodeLabels(labels map[string]string) []byte {
	if len(labels) == 0 {
		return []byte("{}")
	}
	b, _ := json.Marshal(labels) // a map of strings cannot fail
	return b
}

// DecodeObject parses an object from a driver's JSON column.
func DecodeObject(b []byte) (*resource.Object, error) {
	var o resource.Object
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("decode stored object: %w", err)
	}
	return &o, nil
}

// PageLimit applies DefaultPageSize and MaxPageSize to a requested limit.
func PageLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultPageSize
	case limit > MaxPageSize:
		return MaxPageSize
	}
	return limit
}

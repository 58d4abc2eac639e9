package store

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/resource"
)

// RetentionChunk is how many rows one transaction of the retention job
// deletes at most: a few hundred rows of a tenant are a short transaction,
// and the tenant's writers (the gateway's batches) wait for one chunk, not
// for the whole sweep.
const RetentionChunk = 300

// RetentionReader reads what retention needs to decide.
type RetentionReader interface {
	// RecordsOldest returns up to limit resources of kind with a
	// resourceVersion greater than after, in resourceVersion order: the
	// least recently written first.
	RecordsOldest(ctx context.Context, kind string, after int64, limit int) ([]*resource.Object, error)
	// AuditCheckpoint returns the checkpoint of the tenant's last audit
	// cut, nil when its chain was never cut.
	AuditCheckpoint(ctx context.Context) (*audit.Checkpoint, error)
}

// RetentionTx deletes what a tenant's retention policy lets go, in
// transactions of at most RetentionChunk rows.
type RetentionTx interface {
	// RecordsPurge deletes each of objs (runtime records, as RecordsOldest
	// returned them) whose stored resourceVersion is still the one it
	// carries, appending for each a DELETED change that carries only its
	// identity (apiVersion, kind, name, namespace, uid and the new
	// resourceVersion), and returns how many it deleted. A record written
	// since it was read is kept.
	RecordsPurge(ctx context.Context, objs []*resource.Object) (int, error)
	// EventSweep deletes, among the limit oldest events, those stored
	// before before, and returns how many: fewer than limit means no more
	// are due.
	EventSweep(ctx context.Context, before time.Time, limit int) (int, error)
	// SessionSweep deletes up to limit of the tenant's console sessions
	// that expired before before and returns how many.
	SessionSweep(ctx context.Context, before time.Time, limit int) (int, error)
	// AuditCut stores cp, sealed, as the tenant's audit checkpoint and
	// deletes the audit records up to cp.Seq. cp must name a stored
	// record by its sequence number and hash, after the current
	// checkpoint; ErrConflict otherwise. It returns how many records it
	// deleted.
	AuditCut(ctx context.Context, cp audit.Checkpoint) (int, error)
}

// PreparedPurge is one record of RecordsPurge, checked: its key, the
// stored version it must still have, and the DELETED change's object.
type PreparedPurge struct {
	Key resource.Key
	UID string
	// Version is the resourceVersion the record must still have.
	Version int64
}

// PreparePurge checks objs for RecordsPurge: runtime records only
// (resource.IsRecordKind), each with a valid key and resourceVersion.
func PreparePurge(objs []*resource.Object) ([]PreparedPurge, error) {
	out := make([]PreparedPurge, 0, len(objs))
	for _, o := range objs {
		if o == nil {
			return nil, fmt.Errorf("purge: nil object")
		}
		if !resource.IsRecordKind(o.Kind) {
			return nil, fmt.Errorf("purge %s: only runtime records are purged", o.Key())
		}
		if err := CheckKey(o.Key()); err != nil {
			return nil, fmt.Errorf("purge: %w", err)
		}
		v, err := ParseVersion(o.Metadata.ResourceVersion)
		if err != nil {
			return nil, fmt.Errorf("purge %s: %w", o.Key(), err)
		}
		out = append(out, PreparedPurge{Key: o.Key(), UID: o.Metadata.UID, Version: v})
	}
	return out, nil
}

// Tombstone is the object of the DELETED change of a purged record: its
// identity at version rv, without spec or status, so that a watcher drops
// it from its cache while the change log does not store the record again.
func (p PreparedPurge) Tombstone(rv int64) ([]byte, error) {
	o := &resource.Object{APIVersion: resource.GroupVersion, Kind: p.Key.Kind, Metadata: resource.ObjectMeta{
		Name: p.Key.Name, Namespace: p.Key.Namespace, UID: p.UID, ResourceVersion: FormatVersion(rv)}}
	return EncodeObject(o)
}

// CheckAuditCut checks a checkpoint given to AuditCut in tenant: its
// tenant, a positive sequence number, a hash and a seal.
func CheckAuditCut(tenant string, cp audit.Checkpoint) error {
	switch {
	case cp.Tenant != tenant:
		return fmt.Errorf("audit cut: the checkpoint names tenant %q inside tenant %q", cp.Tenant, tenant)
	case cp.Seq <= 0 || cp.Hash == "":
		return fmt.Errorf("audit cut: the checkpoint needs a sequence number and a hash")
	case len(cp.Seal) == 0:
		return fmt.Errorf("audit cut: the checkpoint is not sealed")
	}
	return nil
}

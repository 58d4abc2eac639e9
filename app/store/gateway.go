package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
)

// GatewayTx holds the tool gateway's shared state inside a tenant
// transaction: idempotency claims, which make a side effect happen once
// across retries and replicas, and usage counters, which enforce rate limits
// and budgets across replicas. Both are plain rows under the tenant's
// row-level security; neither appears in the change log.
type GatewayTx interface {
	// IdempotencyClaim claims c.Key in c.Namespace for the call c.Call. It
	// returns "" when the claim is taken: no claim existed, the existing
	// claim was released, it is older than c.Window at c.Now, or c.Force is
	// set. Otherwise it returns the name of the call that holds the claim
	// and changes nothing. Two transactions claiming the same key at once
	// (on one or several processes) serialize: exactly one gets "".
	IdempotencyClaim(ctx context.Context, c IdempotencyClaim) (holder string, err error)
	// IdempotencyRelease releases the claim of key in namespace if call
	// still holds it, so that a retry of a denied, failed, cancelled or
	// expired call runs again. Releasing a claim held by another call, or
	// none, changes nothing.
	IdempotencyRelease(ctx context.Context, namespace, key, call string) error
	// UsageCharge adds each charge to its counter, in order, all or none: a
	// charge that would take its counter above a hard cap (MaxCalls or
	// MaxCost, zero meaning no cap) stops the operation, the charges
	// already added are taken back, and exceeded is the index of the
	// refusing charge; -1 when every charge was added. totals holds each
	// counter's value after the operation (for the refusing charge and
	// those after it, the unchanged value).
	UsageCharge(ctx context.Context, charges []UsageCharge) (totals []UsageTotal, exceeded int, err error)
	// IdempotencySweep deletes up to limit claims made before before,
	// oldest first, and returns how many it deleted (fewer than limit: no
	// more are left). A claim taken over while the sweep runs is kept.
	IdempotencySweep(ctx context.Context, before time.Time, limit int) (deleted int, err error)
	// UsageSweep deletes the counters of windows that started before
	// before and returns how many.
	UsageSweep(ctx context.Context, before time.Time) (int, error)
}

// GatewayReader reads the tool gateway's shared state.
type GatewayReader interface {
	// IdempotencyHolder returns the call holding a claim that would stop
	// c, as IdempotencyClaim would, without claiming anything: "" when the
	// key is unclaimed, released, claimed at or before c.Now minus
	// c.Window, or c.Force is set. It is one indexed read, for a caller
	// that wants to know before it acts whether the key is taken; only
	// IdempotencyClaim decides a race.
	IdempotencyHolder(ctx context.Context, c IdempotencyClaim) (holder string, err error)
	// UsageGet returns the counters of keys in the window starting at
	// windowStart, zero for a counter never charged.
	UsageGet(ctx context.Context, keys []UsageKey) ([]UsageTotal, error)
}

// IdempotencyClaim is one claim of an idempotency key.
type IdempotencyClaim struct {
	// Namespace scopes the key.
	Namespace string
	// Key is the idempotency key.
	Key string
	// Call is the name of the ToolCall claiming the key.
	Call string
	// Now is the claim's time.
	Now time.Time
	// Window is how long a claim blocks others.
	Window time.Duration
	// Force takes the claim whoever holds it.
	Force bool
}

// UsageKey names one counter: a scope key such as "tool:default/crm.refund"
// and the start of its fixed window.
type UsageKey struct {
	Key         string
	WindowStart time.Time
}

// UsageCharge adds calls and cost to one counter, refusing to pass a hard
// cap.
type UsageCharge struct {
	UsageKey
	Calls int64
	Cost  float64
	// MaxCalls and MaxCost are hard caps; zero means none.
	MaxCalls int64
	MaxCost  float64
}

// UsageTotal is a counter's value.
type UsageTotal struct {
	Calls int64
	Cost  float64
}

// CallWriter writes the tool gateway's hot path: a batch of tool-call
// writes of one tenant in one transaction, in as few round trips as the
// driver can manage (Postgres: one).
type CallWriter interface {
	// WriteCalls applies ws in order, in one transaction of tenant, as if
	// each write's parts ran one after another through the Tx methods:
	//
	//  1. Update replaces the status of Update.Stored, whose
	//     resourceVersion is the precondition. A stale or missing record
	//     sets the write's Err (ErrConflict) and skips its other parts.
	//  2. Claim is IdempotencyClaim. A claim held by another call sets
	//     Holder and skips the write's other parts.
	//  3. Charges is UsageCharge. A refused charge sets Exceeded, releases
	//     the claim taken in step 2 and skips the remaining parts.
	//  4. Creates are ResourceCreate, in order.
	//  5. Release is IdempotencyRelease.
	//  6. Events are EventInsert, in order.
	//
	// A write that fails otherwise (a name that exists, a bad argument, a
	// database error) rolls the whole transaction back and WriteCalls
	// returns a *BatchError naming it; nothing is written.
	//
	// With durable set, WriteCalls returns once the writes are durable.
	// Without, it may return as soon as the transaction committed: its
	// writes are visible, and the tenant's lock is free for the next
	// batch, but they may not yet be durable, and nobody may be told of
	// them (above all, no tool with a side effect may run on the strength
	// of a claim) before Sync, called after WriteCalls returned, returns
	// nil, or before a later durable commit of the same store returned
	// (commits become durable in commit order). Under load that lets the
	// next batch run while this one is flushed; alone, a durable commit
	// saves the round trip of Sync.
	WriteCalls(ctx context.Context, tenant string, ws []*CallWrite, durable bool) error
	// ClaimHolder is Reader.IdempotencyHolder of tenant on its own, in as
	// few round trips as the driver can manage (Postgres: one; SQLite: one
	// statement, no transaction around it): the read a read-only tool call
	// makes before its tool runs.
	ClaimHolder(ctx context.Context, tenant string, c IdempotencyClaim) (holder string, err error)
	// ClaimReadFirst reports whether ClaimHolder costs less than a claim's
	// share of a batched WriteCalls, so that a read-only call is better
	// recorded once, with its result, after reading its claim, than
	// claimed before its tool runs and written again after: true for
	// SQLite (one prepared statement on a reader connection), false for
	// Postgres (a round trip and a transaction of its own per call, where
	// the claim shares a batch's single round trip).
	ClaimReadFirst() bool
	// Sync returns when every transaction committed before it was called
	// is durable. Concurrent calls share the work.
	Sync(ctx context.Context) error
}

// CallWrite is one write of WriteCalls: its parts, all optional, and, once
// WriteCalls returned nil, its outcome.
type CallWrite struct {
	Update  *StatusUpdate
	Claim   *IdempotencyClaim
	Charges []UsageCharge
	Creates []*resource.Object
	Release *IdempotencyRelease
	Events  []events.Event

	// Err is ErrConflict when Update's precondition failed.
	Err error
	// Holder is the call holding the claim when it was not taken.
	Holder string
	// Exceeded is the index of the refused charge, -1 when none was.
	Exceeded int
	// Totals are the counters after the charges, as UsageCharge returns.
	Totals []UsageTotal
	// Updated is the stored object after Update.
	Updated *resource.Object
	// Created are the stored objects of Creates.
	Created []*resource.Object
	// Inserted are the stored Events, with their sequence numbers.
	Inserted []events.Event

	prep *PreparedCallWrite
}

// StatusUpdate replaces the status of Stored, a record as last read or
// written: its resourceVersion is the precondition.
type StatusUpdate struct {
	Stored *resource.Object
	Status map[string]any
}

// IdempotencyRelease names a claim to release if Call still holds it.
type IdempotencyRelease struct {
	Namespace, Key, Call string
}

// BatchError is the error of one write of a batch, which rolled the batch
// back.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("write %d of the batch: %v", e.Index, e.Err) }

func (e *BatchError) Unwrap() error { return e.Err }

// reset clears the outcome.
func (w *CallWrite) reset() {
	w.Err, w.Holder, w.Exceeded, w.Totals, w.Updated, w.Created, w.Inserted = nil, "", -1, nil, nil, nil, nil
}

// Prepare checks w and does its encoding work (copies, JSON) once, at now,
// so that callers can do it in parallel before the write is queued behind
// others; drivers call it again, which returns the cached result. It
// resets the outcome.
func (w *CallWrite) Prepare(now time.Time) (*PreparedCallWrite, error) {
	w.reset()
	if w.prep != nil {
		return w.prep, nil
	}
	p := &PreparedCallWrite{}
	if w.Update != nil {
		if w.Update.Stored == nil {
			return nil, errors.New("status update: stored object is required")
		}
		if err := CheckKey(w.Update.Stored.Key()); err != nil {
			return nil, fmt.Errorf("status update: %w", err)
		}
		v, err := ParseVersion(w.Update.Stored.Metadata.ResourceVersion)
		if err != nil {
			return nil, fmt.Errorf("status update of %s: %w", w.Update.Stored.Key(), err)
		}
		p.UpdateVersion = v
		out, changed, err := PrepareUpdateStatus(w.Update.Stored, w.Update.Status, "")
		if err != nil {
			return nil, err
		}
		if changed {
			if p.Update, err = Encode(out); err != nil {
				return nil, err
			}
		}
	}
	if w.Claim != nil {
		c, err := PrepareIdempotencyClaim(*w.Claim, now)
		if err != nil {
			return nil, err
		}
		p.Claim = &c
	}
	var err error
	if p.Charges, err = PrepareUsageCharges(w.Charges); err != nil {
		return nil, err
	}
	for _, o := range w.Creates {
		out, err := PrepareCreate(o, 0, now)
		if err != nil {
			return nil, err
		}
		e, err := Encode(out)
		if err != nil {
			return nil, err
		}
		p.Creates = append(p.Creates, e)
	}
	if r := w.Release; r != nil && (r.Key == "" || r.Call == "") {
		return nil, errors.New("idempotency release: key and call are required")
	}
	for _, ev := range w.Events {
		pe := PreparedEvent{Event: ev}
		if pe.Time.IsZero() {
			pe.Time = now
		}
		pe.Time = storedTime(pe.Time)
		if len(ev.Data) > 0 {
			if pe.Data, err = resource.MarshalValue(ev.Data); err != nil {
				return nil, fmt.Errorf("event %s: encode data: %w", ev.Type, err)
			}
		}
		p.Events = append(p.Events, pe)
	}
	w.prep = p
	return p, nil
}

// PreparedCallWrite is a CallWrite checked and encoded by Prepare.
type PreparedCallWrite struct {
	// Update is the record with its new status, nil when the status is
	// unchanged; UpdateVersion is the stored version it replaces.
	Update        *EncodedObject
	UpdateVersion int64
	Claim         *IdempotencyClaim
	Charges       []UsageCharge
	Creates       []*EncodedObject
	Events        []PreparedEvent
}

// PreparedEvent is an event with its time in the stored form and its data
// encoded.
type PreparedEvent struct {
	events.Event
	Data []byte
}

// EncodedObject is an object encoded once, its resourceVersion left for the
// driver to fill in when it allocates one.
type EncodedObject struct {
	// Object is the object; Stored sets its resourceVersion.
	Object *resource.Object
	// Labels are the labels as the drivers' labels columns hold them.
	Labels []byte
	// json is the encoding with a random placeholder as resourceVersion,
	// which starts at json[at:] and is placeholderLen bytes long.
	json []byte
	at   int
}

const placeholderLen = 2 + 32 // a JSON string of 32 hex digits

// Encode encodes o for EncodedObject.JSON. The placeholder is random, so
// that no content of the object (a label, a field of the spec) can be
// mistaken for it.
func Encode(o *resource.Object) (*EncodedObject, error) {
	var r [16]byte
	_, _ = rand.Read(r[:])
	placeholder := hex.EncodeToString(r[:])
	c := *o
	c.Metadata.ResourceVersion = placeholder
	b, err := EncodeObject(&c)
	if err != nil {
		return nil, err
	}
	at := bytes.Index(b, []byte(`"`+placeholder+`"`))
	if at < 0 {
		return nil, fmt.Errorf("encode %s: resourceVersion not found in the encoding", o.Key())
	}
	return &EncodedObject{Object: o, Labels: EncodeLabels(o.Metadata.Labels), json: b, at: at}, nil
}

// JSON returns the encoding with resourceVersion rv.
func (e *EncodedObject) JSON(rv int64) []byte {
	v := strconv.Quote(FormatVersion(rv))
	out := make([]byte, 0, len(e.json)-placeholderLen+len(v))
	out = append(out, e.json[:e.at]...)
	out = append(out, v...)
	return append(out, e.json[e.at+placeholderLen:]...)
}

// Stored sets the object's resourceVersion to rv and returns it.
func (e *EncodedObject) Stored(rv int64) *resource.Object {
	e.Object.Metadata.ResourceVersion = FormatVersion(rv)
	return e.Object
}

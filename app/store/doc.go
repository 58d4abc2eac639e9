// Package store defines the one storage interface every backend implements:
// versioned resource writes with optimistic concurrency, paged lists with
// selectors, a change log that backs watch, the persisted event log, the
// hash-chained audit log, API keys, and the tool gateway's shared state
// (idempotency claims and usage counters, GatewayTx). Listen signals every
// commit that appended to the change log, ListenConfig only those that
// wrote configuration rather than runtime records. Drivers live in
// sub-packages (store/sqlite, store/postgres); store/storetest is the
// conformance suite every driver must pass.
package store

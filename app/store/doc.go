// Package store defines the one storage interface every backend implements:
// versioned resource writes with optimistic concurrency, paged lists with
// selectors, a change log that backs watch, the persisted event log, the
// hash-chained audit log and API keys. Drivers live in sub-packages
// (store/sqlite, store/postgres); store/storetest is the conformance suite
// every driver must pass.
package store

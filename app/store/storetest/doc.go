// Package storetest is the conformance suite of store.Store. Every driver
// (store/sqlite, store/postgres, …) calls Run from its own tests against a
// real database, so all backends provably share one behaviour: versioning,
// generation rules, preconditions, paging and continue tokens, the change
// log, Listen and ListenConfig, events, the audit chain, API keys, tenant
// isolation, identity (the tenant directory, members, sessions, API key
// management and signing keys) and the tool gateway's idempotency claims
// and usage counters, under concurrency too.
// BenchmarkList, BenchmarkCreate, BenchmarkIdempotencyClaim and
// BenchmarkUsageCharge measure the same workloads on each.
package storetest

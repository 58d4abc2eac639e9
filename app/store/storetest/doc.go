// Package storetest is the conformance suite of store.Store. Every driver
// (store/sqlite, store/postgres, …) calls Run from its own tests against a
// real database, so all backends provably share one behaviour: versioning,
// generation rules, preconditions, paging and continue tokens, the change
// log and Listen, events, the audit chain, API keys, tenant isolation, and
// identity: the tenant directory, members, sessions, API key management
// and signing keys.
// BenchmarkList and BenchmarkCreate measure the same workloads on each.
package storetest

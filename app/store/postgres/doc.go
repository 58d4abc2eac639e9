// Package postgres is the shared, multi-replica store driver on PostgreSQL
// through pgx v5. It implements store.Store with row-level security on every
// tenant table: each transaction starts with set_config('warden.tenant_id',
// tenant, true) (SET LOCAL), and the server connects as the warden_app role,
// which owns nothing and cannot bypass RLS, so a missing tenant filter in a
// query cannot leak another tenant's rows. Migrations (migrations/postgres)
// run on Open as the owner role named by the URL, under an advisory lock.
// Commits that append to the change log also pg_notify the
// warden_changes channel, with a payload that says whether the commit wrote
// configuration; every replica LISTENs on one dedicated connection and
// forwards the signal to its Listen callbacks, and to its ListenConfig
// callbacks for configuration commits. Idempotency claims and usage
// charges are single upserts whose row locks serialize replicas; they take
// no tenant-wide lock.
package postgres

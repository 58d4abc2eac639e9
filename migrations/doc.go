// Package migrations embeds the SQL schema of every store driver. Each driver
// has its own directory of numbered migrations (sqlite/, postgres/); the
// drivers in app/store/sqlite and app/store/postgres read them from FS, apply
// the ones not yet recorded in their schema_migrations table, and never keep
// SQL anywhere else outside the drivers.
package migrations

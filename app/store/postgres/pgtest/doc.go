// Package pgtest gives Postgres tests a database of their own on the server
// named by TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable). Tests that
// need Postgres fail, never skip, when it cannot be reached, so a missing
// database is noticed rather than silently untested.
package pgtest

// Package sqlite is the embedded store driver: SQLite in-process through the
// pure-Go modernc.org/sqlite driver (no cgo), the default backend of
// `warden up`. It implements store.Store with one writer connection (SQLite
// allows one writer at a time, so writes queue in Go instead of failing with
// SQLITE_BUSY) and a separate pool of read-only connections for View, in WAL
// mode so readers never block the writer. Listen and ListenConfig callbacks
// run in-process after commit. The schema comes from migrations/sqlite and
// is applied on Open.
//
// Because there is one writer connection, an Update must not call Update
// again from inside its fn (the inner call would wait for the outer one
// forever); View inside Update is fine but does not see the uncommitted
// writes. Reads through the Tx do see them.
package sqlite

// Package backend opens a store driver from a URL, so that the backend is
// chosen by configuration (`--store`), never by code: sqlite://PATH for the
// embedded store (store/sqlite) and postgres://… or postgresql://… for the
// shared store (store/postgres). kubernetes://… is reserved for a later
// driver. Open also migrates the database.
package backend

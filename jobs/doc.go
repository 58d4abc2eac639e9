// Package jobs will hold Warden's background work: River workers (on
// Postgres, or River's SQLite driver in local mode) and their wiring, e.g.
// approval expiry, knowledge-source sync and AgBOM refresh.
//
// Nothing lives here yet: the first workers arrive with a later issue.
package jobs

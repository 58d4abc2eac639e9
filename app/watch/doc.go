// Package watch turns the store's change log into live change streams.
//
// One Hub serves every watcher of a process. Per tenant it keeps a ring of
// the most recent changes, filled by a single reader that wakes when the
// store signals a commit (on this process or on another replica). Watchers
// never get their own copy of the feed: each keeps a cursor, reads what is
// newer from the ring, and sleeps on a broadcast channel that the reader
// closes whenever the ring grows. So a change is read from the database once
// however many watchers there are, a slow watcher only delays itself, and a
// watcher that falls behind the ring catches up from the store's change log
// (or learns with store.ErrGone that its resume point is no longer retained).
package watch

// Package gcfloor keeps the garbage collector's heap goal at or above a
// floor in a serving process.
//
// Go's collector sets its next goal from the heap that survived the last
// cycle: live × (1 + GOGC/100). A Warden server keeps a small live heap
// (configuration snapshots, policy programs, caches: a few megabytes) and
// allocates fast (every tool call decodes, copies and encodes its record),
// so even at GOGC=400 it collects several times a second under load, and
// every cycle slows the calls in flight (mark assists, the write barrier,
// two brief stops of the world). A floor of a few hundred megabytes makes
// the cycles rarer by the same factor without letting a large live heap
// grow further: once live × (1 + base/100) passes the floor, the base
// percentage alone sets the goal again.
//
// The tuner runs once after every cycle, from a finalizer that re-arms
// itself (no goroutine, no timer), reads the live heap from runtime/metrics
// and sets GOGC so that the next goal is the larger of the floor and the
// base goal. A memory limit (GOMEMLIMIT, or the container's) still bounds
// the heap: the collector runs early when it is near, whatever GOGC says.
package gcfloor

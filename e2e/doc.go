// Package e2e holds whole-system tests of the control plane core: the real
// server on a loopback listener over a real store (SQLite, and PostgreSQL
// through pgtest), bootstrapped exactly as `warden up` does, driven by the
// real CLI (cli.RunWith) with the commands of the README's tour; and
// `warden up` itself, run in-process from a clean WARDEN_HOME; and the
// console in headless chromium ($CHROMIUM, default /usr/bin/chromium)
// against the real server and a real OpenID Provider.
//
// The tests need PostgreSQL at TEST_DATABASE_URL (see
// docs/operations.md) and read the example fleet from ../examples/fleet.
package e2e

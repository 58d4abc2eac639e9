// Package e2e will hold whole-system tests: a real `warden up` process
// driven through the CLI, the API and a headless browser (chromedp with the
// Debian chromium package), each scenario from a clean WARDEN_HOME.
//
// Nothing lives here yet; the end-to-end tests of the control plane core
// live beside the server for now, and this package gains its first tests
// with the web console.
package e2e

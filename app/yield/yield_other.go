//go:build !linux

package yield

import "errors"

type poller struct{}

func newPoller() (*poller, error) { return nil, errors.New("yield: no eventfd on this platform") }

func (p *poller) wait() bool   { return false }
func (p *poller) close() error { return nil }

package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
)

// Listeners are the sockets of a Warden process, bound before anything is
// set up so that a busy port fails first, having changed nothing.
type Listeners struct {
	// Control is the control plane's; Gateway the tool gateway's, nil when
	// the gateway is off.
	Control, Gateway net.Listener
	// MCP is the MCP gateway's (BindMCP), nil when it is off.
	MCP net.Listener
	// Router is the model router's, nil when the router is off
	// (ListenRouter binds it).
	Router net.Listener
}

// BindError is a listener that could not be bound.
type BindError struct {
	// Service is "control plane" or "tool gateway".
	Service string
	Addr    string
	Err     error
}

func (e *BindError) Error() string {
	return fmt.Sprintf("%s: listen on %s: %v", e.Service, e.Addr, e.Err)
}

func (e *BindError) Unwrap() error { return e.Err }

// Service names of BindError.
const (
	ServiceControl = "control plane"
	ServiceGateway = "tool gateway"
	ServiceRouter  = "model router"
)

// Listen binds the control plane on controlAddr and the tool gateway on
// gatewayAddr (GatewayOff binds none). A failure is a *BindError, and
// nothing stays bound.
func Listen(controlAddr, gatewayAddr string) (*Listeners, error) {
	ln, err := net.Listen("tcp", controlAddr)
	if err != nil {
		return nil, &BindError{Service: ServiceControl, Addr: controlAddr, Err: err}
	}
	ls := &Listeners{Control: ln}
	if gatewayAddr == GatewayOff {
		return ls, nil
	}
	gln, err := net.Listen("tcp", gatewayAddr)
	if err != nil {
		_ = ln.Close()
		return nil, &BindError{Service: ServiceGateway, Addr: gatewayAddr, Err: err}
	}
	ls.Gateway = gln
	return ls, nil
}

// ListenRouter binds the model router on addr. A failure is a
// *BindError; the other listeners stay bound (Close closes them).
func (ls *Listeners) ListenRouter(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &BindError{Service: ServiceRouter, Addr: addr, Err: err}
	}
	ls.Router = ln
	return nil
}

// Close closes the listeners that are still open.
func (ls *Listeners) Close() {
	if ls == nil {
		return
	}
	for _, l := range []net.Listener{ls.Control, ls.Gateway, ls.MCP, ls.Router} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// ServeListeners serves the control plane and (when both are there) the
// tool gateway on ls, over TLS when the configuration says so, until ctx is
// cancelled. It takes ownership of ls. A nil ls.Control serves no control
// plane (Config.ControlAddr ControlOff); a gateway without ls.Gateway
// governs the MCP gateway's calls but serves no port of its own.
func (s *Server) ServeListeners(ctx context.Context, ls *Listeners) error {
	tlsCfg, err := s.cfg.TLSConfig()
	if err != nil {
		ls.Close()
		return err
	}
	if (s.cfg.ControlAddr == ControlOff) != (ls.Control == nil) {
		ls.Close()
		return errors.New("serve: the control plane's listener and configuration disagree (ControlAddr off or not)")
	}
	if s.gateway == nil && ls.Gateway != nil {
		ls.Close()
		return errors.New("serve: the gateway's listener and configuration disagree (GatewayAddr off or not)")
	}
	if (s.router == nil) != (ls.Router == nil) {
		ls.Close()
		return errors.New("serve: the model router's listener and configuration disagree (RouterAddr set or not)")
	}
	if s.router != nil {
		stop := s.serveRouter(ctx, ls.Router, tlsCfg)
		defer stop()
	}
	ln := ls.Control
	if ln != nil {
		if tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		s.log.InfoContext(ctx, "control plane listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil)
	}
	if s.gateway == nil {
		if ln == nil {
			// serveControl's nil listener does not close ls.
			defer ls.Close()
		}
		return s.Serve(ctx, ln)
	}
	gln := ls.Gateway
	if gln != nil {
		if tlsCfg != nil {
			gln = tls.NewListener(gln, tlsCfg)
		}
		s.log.InfoContext(ctx, "tool gateway listening", "addr", gln.Addr().String(), "tls", tlsCfg != nil)
	}
	s.useMCPListener(ctx, ls.MCP, tlsCfg)
	return s.ServeAll(ctx, ln, gln)
}

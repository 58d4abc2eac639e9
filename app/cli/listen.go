package cli

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/warden-dev/warden/app/server"
)

// bindListeners binds up's listeners before anything else happens, so that
// a busy port fails with a hint naming the flag that moves it, before any
// first-start setup has written a config pointing at that port.
func bindListeners(host string, port, gatewayPort, routerPort int) (*server.Listeners, error) {
	gatewayAddr := server.GatewayOff
	if gatewayPort != 0 {
		gatewayAddr = net.JoinHostPort(host, strconv.Itoa(gatewayPort))
	}
	ls, err := server.Listen(net.JoinHostPort(host, strconv.Itoa(port)), gatewayAddr)
	if err == nil && routerPort != 0 {
		if err = ls.ListenRouter(net.JoinHostPort(host, strconv.Itoa(routerPort))); err != nil {
			ls.Close()
		}
	}
	var be *server.BindError
	if errors.As(err, &be) {
		flag, p := "--port", port
		switch be.Service {
		case server.ServiceGateway:
			flag, p = "--gateway-port", gatewayPort
		case server.ServiceRouter:
			flag, p = "--router-port", routerPort
		}
		return nil, fmt.Errorf("cannot listen on %s for the %s: %w; "+
			"is another Warden (or another program) using port %d? Stop it, or choose another port with %s",
			be.Addr, be.Service, be.Err, p, flag)
	}
	return ls, err
}

package listener

import (
	"context"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
)

// ShutdownTimeout bounds how long a listener's shutdown waits for the
// calls in flight.
const ShutdownTimeout = 10 * time.Second

// ShutdownFiber shuts app down, letting the calls in flight finish within
// ShutdownTimeout, and closes ln, the listener app serves. fasthttp closes
// only the listeners its Serve has registered: a shutdown that came before
// the serving goroutine got that far left it accepting for good, and the
// process never stopped.
func ShutdownFiber(app *fiber.App, ln net.Listener) error {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := app.ShutdownWithContext(ctx)
	_ = ln.Close()
	return err
}

package listener_test

import (
	"net"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/listener"
)

// TestShutdownBeforeServe: a shutdown that comes before the serving
// goroutine has started still stops it, so a process asked to stop just
// after it started does stop.
func TestShutdownBeforeServe(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	require.NoError(t, listener.ShutdownFiber(app, ln))
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server still accepts after its shutdown")
	}
}

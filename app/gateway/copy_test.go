package gateway

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/warden-dev/warden/app/auth"
)

// TestRequestValuesOutliveTheirBuffer takes the namespace of a request
// and then lets Fiber reuse the request's buffer, as it does once the
// handler returns while a resumption the handler started still runs.
func TestRequestValuesOutliveTheirBuffer(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	fctx := &fasthttp.RequestCtx{}
	fctx.Request.SetRequestURI("/v1/tool-calls/refund-1?namespace=payments")
	c := app.AcquireCtx(fctx)
	defer app.ReleaseCtx(c)

	ns, err := namespaceOf(c, auth.Principal{})
	require.NoError(t, err)
	require.Equal(t, "payments", ns)
	c.Request().URI().QueryArgs().Set("namespace", "zzzzzzzz") // the buffer's next request
	require.Equal(t, "zzzzzzzz", c.Query("namespace"))
	require.Equal(t, "payments", ns, "the namespace is a string of its own")
}

package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/warden-dev/warden/app/router"
)

// The model router's read endpoints. Build the Client with the router's
// address (port 8083), not the control plane's.

// ModelCapabilities returns the capability vector of every Model the
// caller may use in namespace (GET /v1/models/capabilities).
func (c *Client) ModelCapabilities(ctx context.Context, namespace string) (*router.CapabilityList, error) {
	var out router.CapabilityList
	err := c.doJSON(ctx, http.MethodGet, "/v1/models/capabilities", url.Values{"namespace": {namespace}}, "", nil, &out)
	return &out, err
}

// RouteExplain returns the recorded routing decisions of route name in an
// execution (GET /v1/route/{name}/explain?execution=).
func (c *Client) RouteExplain(ctx context.Context, namespace, name, execution string) (*router.Explanation, error) {
	var out router.Explanation
	err := c.doJSON(ctx, http.MethodGet, "/v1/route/"+url.PathEscape(name)+"/explain",
		url.Values{"namespace": {namespace}, "execution": {execution}}, "", nil, &out)
	return &out, err
}

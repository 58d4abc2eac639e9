package gateway

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// callNamespace is the namespace of the call named by the :id parameter:
// namespaceOf's answer when the request names one, or else, for a
// tenant-wide credential, the namespace the call is found in (a call's id
// is unique in its tenant), as /v1/approvals/{id}/decide finds approvals.
// Authorization stays with the handler's own check in that namespace.
func (g *Gateway) callNamespace(c *fiber.Ctx, p auth.Principal) (string, error) {
	ns, err := namespaceOf(c, p)
	if err == nil {
		return ns, nil
	}
	name := c.Params("id")
	sel, serr := resource.ParseSelector("metadata.name=" + name)
	if serr != nil {
		return "", apierr.New(apierr.CodeInvalidRequest, "invalid tool call id %q", name)
	}
	var found []*resource.Object
	verr := g.st.View(c.UserContext(), p.Tenant, func(ctx context.Context, r store.Reader) error {
		res, err := r.ResourceList(ctx, store.ListParams{Kind: resource.KindToolCall, Selector: sel, Limit: 2})
		if err != nil {
			return err
		}
		found = res.Items
		return nil
	})
	if verr != nil {
		return "", errorf("find tool call %s: %w", name, verr)
	}
	if len(found) == 0 {
		return "", apierr.New(apierr.CodeNotFound, "tool call %q not found", name)
	}
	return found[0].Metadata.Namespace, nil
}

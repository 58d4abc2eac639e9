package apply_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/apply"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
)

const model = "apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata: {name: m1}\nspec: {provider: openai, model: gpt-4o}\n"

// TestApplyAsksTheAuthorizer: the pipeline decides nothing itself. Built
// without an Authorizer it lets only the system apply (an admin key's own
// role counts for nothing); with app/authz, a viewer key that a RoleBinding
// makes admin of the namespace applies there.
func TestApplyAsksTheAuthorizer(t *testing.T) {
	t.Parallel()
	st := openStore(t, "sqlite")
	ctx := context.Background()
	docs := func() []*resource.Object {
		d, err := resource.DecodeDocuments([]byte(model))
		require.NoError(t, err)
		return d
	}
	admin := auth.Principal{Tenant: server.LocalTenant, Subject: "apikey:ci", Kind: auth.KindAPIKey, Role: auth.RoleAdmin, Namespace: "default"}
	bare := apply.New(apply.Deps{Store: st, Compiler: compile.New(compile.Options{}.WithDefaults(), policy.NewEngine())})
	_, err := bare.Apply(ctx, admin, docs())
	e, ok := apierr.As(err)
	require.True(t, ok, "%v", err)
	details, err := json.Marshal(e.Details)
	require.NoError(t, err)
	require.Contains(t, string(details), "no authorizer")
	_, err = bare.Apply(ctx, auth.SystemPrincipal(server.LocalTenant), docs())
	require.NoError(t, err)

	az := authz.New(st, nil)
	p := apply.New(apply.Deps{Store: st, Compiler: compile.New(compile.Options{}.WithDefaults(), policy.NewEngine()), Authorizer: az})
	viewer := auth.Principal{Tenant: server.LocalTenant, Subject: "apikey:ci", Kind: auth.KindAPIKey, Role: auth.RoleViewer, Namespace: "default"}
	_, err = p.Apply(ctx, viewer, docs())
	require.Error(t, err)
	rb, err := resource.DecodeDocuments([]byte("apiVersion: warden.dev/v1alpha1\nkind: RoleBinding\nmetadata: {name: ci-admins}\nspec:\n  role: admin\n  subjects: [{kind: APIKey, name: ci}]\n"))
	require.NoError(t, err)
	_, err = p.Apply(ctx, auth.SystemPrincipal(server.LocalTenant), rb)
	require.NoError(t, err)
	az.Invalidate(server.LocalTenant)
	_, err = p.Apply(ctx, viewer, docs())
	require.NoError(t, err)
}

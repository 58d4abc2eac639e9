package authz_test

import (
	"context"
	"testing"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/resource"
)

// BenchmarkAuthorize measures a cached decision: the path of every API call
// after the first one with the same subject, verb, object and namespace.
func BenchmarkAuthorize(b *testing.B) {
	bu := setup(b, sqliteURL(b))
	for i := range 50 {
		bu.bind(b, "team-a", "rb-"+string(rune('a'+i%26))+string(rune('a'+i/26)), auth.RoleViewer, resource.RoleSubject{Kind: authz.SubjectUser, Name: "u" + string(rune('a'+i%26)) + "@example.com"})
	}
	bu.bind(b, "team-a", "editors", auth.RoleEditor, resource.RoleSubject{Kind: authz.SubjectUser, Name: "eve@example.com"})
	eve := user("eve@example.com")
	ctx := context.Background()
	if err := bu.az.Authorize(ctx, eve, auth.VerbApply, "team-a", "agents"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bu.az.Authorize(ctx, eve, auth.VerbApply, "team-a", "agents"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAuthorizeUncached measures a Casbin evaluation (a decision not yet
// memoized in the cache generation), with the Enforcer already built.
func BenchmarkAuthorizeUncached(b *testing.B) {
	bu := setup(b, sqliteURL(b))
	bu.bind(b, "team-a", "editors", auth.RoleEditor, resource.RoleSubject{Kind: authz.SubjectUser, Name: "eve@example.com"})
	ctx := context.Background()
	eve := user("eve@example.com")
	_ = bu.az.Authorize(ctx, eve, auth.VerbGet, "team-a", "agents")
	objs := make([]string, 1024)
	for i := range objs {
		objs[i] = "x" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Distinct namespaces never repeat a memo key.
		_ = bu.az.Authorize(ctx, eve, auth.VerbApply, objs[i%len(objs)]+string(rune('a'+i/len(objs)%26)), "agents")
		if i%4096 == 4095 {
			b.StopTimer()
			bu.az.Invalidate(tenant)
			_ = bu.az.Authorize(ctx, eve, auth.VerbGet, "team-a", "agents")
			b.StartTimer()
		}
	}
}

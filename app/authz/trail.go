package authz

import (
	"context"
	"strings"
	"sync"

	"github.com/warden-dev/warden/app/auth"
)

// PolicySystem is the effective policy of Warden's own calls.
const PolicySystem = "system"

// PolicyNone is the effective policy of a call no grant allowed: refused,
// or one that asked for no permission (who am I, sign-out).
const PolicyNone = "none"

// Trail collects the grants that allowed the authorization decisions of one
// request, for its audit record ("the effective policy"). It is safe for
// concurrent use.
type Trail struct {
	mu     sync.Mutex
	grants []string
}

type trailKey struct{}

// WithTrail returns ctx carrying a new Trail, which every Authorize on that
// context (or one derived from it) adds its grant to.
func WithTrail(ctx context.Context) (context.Context, *Trail) {
	t := &Trail{}
	return context.WithValue(ctx, trailKey{}, t), t
}

// TrailFrom returns the Trail ctx carries, or nil.
func TrailFrom(ctx context.Context) *Trail {
	t, _ := ctx.Value(trailKey{}).(*Trail)
	return t
}

func (t *Trail) add(grant string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.grants {
		if g == grant {
			return
		}
	}
	t.grants = append(t.grants, grant)
}

// Policy returns the grants recorded so far, in order, joined by "; ", or
// "" when none.
func (t *Trail) Policy() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.grants, "; ")
}

// EffectivePolicy is the audit record's policy field of a call by p on
// ctx: the grants that allowed its authorization decisions, PolicySystem
// for Warden itself, or PolicyNone.
func EffectivePolicy(ctx context.Context, p auth.Principal) string {
	if p.System {
		return PolicySystem
	}
	if s := TrailFrom(ctx).Policy(); s != "" {
		return s
	}
	return PolicyNone
}

// EnsureTrail returns ctx when it carries a Trail already, else ctx with a
// new one: code that writes its own audit records starts with it.
func EnsureTrail(ctx context.Context) context.Context {
	if TrailFrom(ctx) != nil {
		return ctx
	}
	ctx, _ = WithTrail(ctx)
	return ctx
}

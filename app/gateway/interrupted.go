package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// A gateway that stops while a tool runs (a crash, a kill, a lost machine)
// leaves the call Running, and nobody would ever finish it. Once no
// gateway can still be running the tool (the tool's own time limit since
// the call started, plus interruptGrace for recording the result), the
// call is finished as Failed with code Unavailable: its outcome is unknown.
// It is not run again: the tool may have acted, and only the caller can
// tell whether repeating it is safe. Failed releases the idempotency claim
// (DESIGN.md), so a retry runs the tool again, with the same
// Idempotency-Key, which lets a tool that deduplicates recognise it.
//
// Should the gateway that ran the tool record its result after all (it was
// cut off from the store for longer than the grace, not dead), that result
// replaces this one: the record then says what happened.
//
// Function tools are never finished this way: they run in the agent, which
// reports their result through AOS whenever it comes.
const (
	interruptGrace = time.Minute
	// mcpRunLimit bounds an MCP tool call for this purpose: the MCP
	// gateway sets no time limit of its own.
	mcpRunLimit = 10 * time.Minute
)

// restTimeout is a REST tool's time limit.
func restTimeout(rs *resource.ToolREST) time.Duration {
	if rs != nil && rs.Timeout != "" {
		if d, err := time.ParseDuration(rs.Timeout); err == nil && d > 0 {
			return d
		}
	}
	return DefaultRESTTimeout
}

// osTimeout is an OS tool's time limit.
func osTimeout(spec *resource.ToolOS) time.Duration {
	if spec != nil && spec.Timeout != "" {
		if d, err := time.ParseDuration(spec.Timeout); err == nil && d > 0 {
			return d
		}
	}
	return DefaultOSTimeout
}

// runLimit is how long a call of the tool can be Running on a gateway
// that is alive; false for a function tool. An unknown tool (deleted
// since) gets the longest limit of any source.
func runLimit(te *toolEntry, known bool) (time.Duration, bool) {
	if !known {
		return mcpRunLimit, true // the longest of any source
	}
	switch te.spec.Source {
	case resource.ToolSourceREST:
		return restTimeout(te.spec.REST), true
	case resource.ToolSourceOS:
		return osTimeout(te.spec.OS), true
	case resource.ToolSourceMCP:
		return mcpRunLimit, true
	}
	return 0, false
}

// finishInterrupted finishes the Running call obj of tenant as interrupted
// once its run limit has passed: at once when it has, otherwise, with
// wait, on a timer (until the gateway closes; the next sweep finds the
// call again).
func (g *Gateway) finishInterrupted(ctx context.Context, tenant string, obj *resource.Object, wait bool) error {
	v, err := viewOf(obj)
	if err != nil {
		return err
	}
	started, err := parseTime(v.Status.StartedAt)
	if err != nil {
		// A Running record always has startedAt; without it the run limit
		// counts from its creation.
		if started, err = parseTime(obj.Metadata.CreationTimestamp); err != nil {
			started = g.now()
		}
	}
	snap, err := g.catalog.get(ctx, tenant)
	if err != nil {
		return err
	}
	te, known := snap.tools[nsName{obj.Metadata.Namespace, v.Spec.ToolRef.Name}]
	limit, ok := runLimit(te, known)
	if !ok {
		return nil
	}
	at := started.Add(limit + interruptGrace)
	ns, name, startedAt := obj.Metadata.Namespace, obj.Metadata.Name, v.Status.StartedAt
	finish := func(ctx context.Context) {
		if err := g.finishIfRunning(ctx, tenant, ns, name, startedAt); err != nil {
			g.log.ErrorContext(ctx, "finish an interrupted call", "toolcall", name, "err", err)
		}
	}
	left := at.Sub(g.now())
	if left <= 0 {
		finish(ctx)
		return nil
	}
	if !wait {
		return nil
	}
	go func() {
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-t.C:
			finish(context.WithoutCancel(ctx))
		case <-g.base.Done():
		}
	}()
	return nil
}

// finishIfRunning records the call as Failed (Unavailable) if it is still
// Running since startedAt: its resourceVersion is the precondition, so a
// result recorded meanwhile by the gateway that ran it wins.
func (g *Gateway) finishIfRunning(ctx context.Context, tenant, ns, name, startedAt string) error {
	var evs []events.Event
	var finished *resource.Object
	err := g.rec.do(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		evs, finished = nil, nil
		key := resource.Key{Kind: resource.KindToolCall, Namespace: ns, Name: name}
		tc, err := getIfExists(ctx, tx, key)
		if err != nil || tc == nil {
			return err
		}
		if phase, _ := tc.Status["phase"].(string); phase != PhaseRunning {
			return nil
		}
		if at, _ := tc.Status["startedAt"].(string); at != startedAt {
			return nil // run again since (an approval's resumption)
		}
		v, err := viewOf(tc)
		if err != nil {
			return err
		}
		c := &call{g: g, p: recordAgent(tenant, tc, v), now: g.now().UTC(), name: name, obj: tc,
			key: v.Spec.SideEffects.IdempotencyKey, req: CallRequest{Tool: v.Spec.ToolRef.Name}}
		failure := apierr.New(apierr.CodeUnavailable,
			"the gateway stopped while tool %q ran (started %s); whether the tool acted is unknown: check before retrying (a retry sends the same Idempotency-Key)",
			v.Spec.ToolRef.Name, startedAt)
		st := cloneMap(tc.Status)
		st["phase"], st["completedAt"] = PhaseFailed, timestamp(c.now)
		st["output"] = errorOutput(failure.Code, failure.Message, map[string]any{"interrupted": true})
		finished, err = tx.ResourceUpdateStatus(ctx, key, st, tc.Metadata.ResourceVersion)
		if errors.Is(err, store.ErrConflict) {
			finished = nil
			return nil
		}
		if err != nil {
			return err
		}
		if err := tx.IdempotencyRelease(ctx, ns, c.key, name); err != nil {
			return err
		}
		w := &txWriter{c: c, tx: tx}
		w.event(ctx, events.ToolCallCompleted, map[string]any{"tool": c.req.Tool, "agent": c.p.Agent, "phase": PhaseFailed,
			"code": failure.Code, "interrupted": true})
		evs = w.evs
		return w.err
	})
	if err != nil {
		return errorf("finish interrupted call %s: %w", name, err)
	}
	if finished != nil {
		g.publish(evs)
		g.waiters.wake(tenant, ns+"/"+name)
	}
	return nil
}

package rag

import (
	"context"
	"errors"
	"fmt"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
)

// checkBound refuses an agent's retrieval from an index that its newest
// compiled manifest does not name (spec.memories.knowledge, compiled from
// the Agent's spec.memory.knowledge). People and API keys without an agent
// are decided by their role alone.
func (s *Service) checkBound(ctx context.Context, p auth.Principal, ns, index string) error {
	if p.Agent == "" {
		return nil
	}
	refuse := func(manifest, format string, args ...any) error {
		e := apierr.New(apierr.CodeForbidden, format, args...)
		e.Details = map[string]any{"agent": p.Agent, "index": index}
		if manifest != "" {
			e.Details["manifest"] = manifest
		}
		return e
	}
	if ns != p.Namespace {
		return refuse("", "agent %q works in namespace %q, not %q", p.Agent, p.Namespace, ns)
	}
	return s.cfg.Store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		mname, spec, err := store.AgentManifest(ctx, r, ns, p.Agent)
		var missing *store.ManifestNotFoundError
		if errors.As(err, &missing) {
			return refuse("", "%s", missing.Reason)
		}
		if err != nil {
			return fmt.Errorf("rag: %w", err)
		}
		for _, k := range spec.Memories.Knowledge {
			if k.Name == index && k.Namespace == ns {
				return nil
			}
		}
		return refuse(mname, "agent %q does not name RAG index %q in its compiled manifest %s: list it in the Agent's spec.memory.knowledge",
			p.Agent, index, mname)
	})
}

// auditDenied records a refused retrieval as an audit event, as every
// denial is; allowed ones are KnowledgeRetrieved events.
func (s *Service) auditDenied(ctx context.Context, p auth.Principal, ns, index string, err error) {
	e, ok := apierr.As(err)
	if !ok && errors.Is(err, auth.ErrForbidden) {
		e, ok = apierr.New(apierr.CodeForbidden, "%v", err), true
	}
	if !ok || e.Code != apierr.CodeForbidden || p.Tenant == "" {
		return
	}
	rec := audit.Record{Time: s.cfg.Now().UTC(), Tenant: p.Tenant, Actor: p.Subject, Verb: "rag/retrieve", Namespace: ns,
		Resource: "RAGIndex/" + index, Outcome: audit.OutcomeDenied, Policy: authz.EffectivePolicy(ctx, p), Reason: e.Code + ": " + e.Message}
	actx := context.WithoutCancel(ctx)
	if werr := s.cfg.Store.Update(actx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, rec)
		return err
	}); werr != nil {
		s.log.ErrorContext(actx, "write the audit record of a refused retrieval", "err", werr, "tenant", p.Tenant, "index", index)
	}
}

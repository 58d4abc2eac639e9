package server

import (
	"context"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
)

// auditHeader is implemented by readers that know the sequence number of
// the newest audit record ever appended, kept apart from the log itself.
type auditHeader interface {
	AuditHead(ctx context.Context) (int64, error)
}

// authorizeAudit allows the audit log to tenant-wide admins and owners.
func (s *Server) authorizeAudit(c *fiber.Ctx, verb string) error {
	a := auditOf(c)
	a.verb, a.resource = verb, authz.ObjAudit
	return s.check(c, auth.VerbList, "", authz.ObjAudit)
}

// handleAuditList lists the tenant's audit records in chain order.
// Query: after (sequence number), limit (default 100, at most 1000), actor,
// verb, namespace, since (RFC 3339 or a duration such as 1h).
func (s *Server) handleAuditList(c *fiber.Ctx) error {
	if err := s.authorizeAudit(c, "list"); err != nil {
		return err
	}
	params := store.AuditListParams{Actor: c.Query("actor"), Verb: c.Query("verb"), Namespace: c.Query("namespace"), Limit: store.DefaultPageSize}
	if v := c.Query("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return badRequest("after must be a sequence number, got %q", v)
		}
		params.After = n
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return badRequest("limit must be a positive integer, got %q", v)
		}
		params.Limit = min(n, store.MaxPageSize)
	}
	if v := c.Query("since"); v != "" {
		since, err := parseSince(v, s.now())
		if err != nil {
			return badRequest("since must be an RFC 3339 time or a duration such as 1h: %s", err.Error())
		}
		params.Since = since
	}
	var recs []audit.Record
	err := s.store.View(c.UserContext(), principal(c).Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		recs, err = r.AuditList(ctx, params)
		return err
	})
	if err != nil {
		return storeError(err)
	}
	res := api.AuditList{APIVersion: "warden.dev/v1alpha1", Kind: "AuditRecordList", Items: recs}
	if recs == nil {
		res.Items = []audit.Record{}
	}
	if len(recs) == params.Limit {
		res.Next = strconv.FormatInt(recs[len(recs)-1].Seq, 10)
	}
	return c.JSON(res)
}

func parseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	return time.Parse(time.RFC3339, v)
}

// handleAuditVerify walks the tenant's whole chain and reports every
// modified, missing, reordered or truncated record. After a retention cut
// the chain starts from the tenant's checkpoint, whose seal must open
// under the master key.
func (s *Server) handleAuditVerify(c *fiber.Ctx) error {
	if err := s.authorizeAudit(c, "verify"); err != nil {
		return err
	}
	var all []audit.Record
	var head int64
	var cp *audit.Checkpoint
	err := s.store.View(c.UserContext(), principal(c).Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		if cp, err = r.AuditCheckpoint(ctx); err != nil {
			return err
		}
		if h, ok := r.(auditHeader); ok {
			var err error
			if head, err = h.AuditHead(ctx); err != nil {
				return err
			}
		}
		params := store.AuditListParams{Limit: store.MaxPageSize}
		if cp != nil {
			params.After = cp.Seq
		}
		for {
			page, err := r.AuditList(ctx, params)
			if err != nil {
				return err
			}
			all = append(all, page...)
			if len(page) < params.Limit {
				return nil
			}
			params.After = page[len(page)-1].Seq
		}
	})
	if err != nil {
		return storeError(err)
	}
	return c.JSON(audit.VerifyChainFrom(s.cfg.Keyring, cp, all, head))
}

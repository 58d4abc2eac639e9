package notifications

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/jobs"
)

// Decider decides approvals; *gateway.Gateway is one. Every channel
// decides through it, as the API does.
type Decider interface {
	Decide(ctx context.Context, p auth.Principal, ns, name string, req api.DecideRequest, override bool) (*resource.Object, error)
}

// Enqueuer inserts notification jobs in a store transaction;
// *jobs.Notifications is one.
type Enqueuer interface {
	EnqueueTx(ctx context.Context, tx store.Tx, args jobs.NotifyArgs, maxAttempts int) error
}

// Config configures a Service.
type Config struct {
	Store   store.Store
	Secrets *secret.Broker
	Jobs    Enqueuer
	// Invites (optional) inserts invitation jobs; nil e-mails none.
	Invites InviteEnqueuer
	// Decider is where decisions that come back are made.
	Decider Decider
	// PublicURL is the console's external URL, the base of e-mail links.
	PublicURL string
	// LinkKey signs e-mail links (32 bytes or more).
	LinkKey []byte
	// HTTPClient posts webhooks and chat messages; nil means a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// TLS is the base TLS configuration of SMTP connections (tests add
	// their own roots); nil means the system's.
	TLS    *tls.Config
	Logger *slog.Logger
	Now    func() time.Time
}

// WithDefaults fills the optional fields.
func (c Config) WithDefaults() Config {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	return c
}

// Validate names every required field that is missing.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("notifications: Config.Store is required"))
	}
	if c.Secrets == nil {
		errs = append(errs, errors.New("notifications: Config.Secrets is required"))
	}
	if c.Jobs == nil {
		errs = append(errs, errors.New("notifications: Config.Jobs is required"))
	}
	if len(c.LinkKey) < 32 {
		errs = append(errs, errors.New("notifications: Config.LinkKey must be at least 32 bytes"))
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, fmt.Errorf("notifications: Config.PublicURL %q is not an http(s) URL", c.PublicURL))
		}
	}
	return errors.Join(errs...)
}

// Service announces approvals and takes decisions back.
type Service struct {
	cfg Config
	log *slog.Logger
}

// New builds a Service.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, log: cfg.Logger}, nil
}

// SetDecider sets where decisions are made, for wiring where the gateway
// is built after the service.
func (s *Service) SetDecider(d Decider) { s.cfg.Decider = d }

// AnnounceTx enqueues, in tx, one notification job per matching channel of
// the approval's namespace and per recipient. It implements
// gateway.Announcer.
func (s *Service) AnnounceTx(ctx context.Context, tx store.Tx, tenant string, ap *resource.Object, env string) error {
	side, _ := ap.Spec["sideEffect"].(string)
	channels, err := listChannels(ctx, tx, ap.Metadata.Namespace)
	if err != nil {
		return err
	}
	for _, ch := range channels {
		spec, err := resource.DecodeSpec[resource.NotificationChannelSpec](ch)
		if err != nil {
			s.log.WarnContext(ctx, "skip a NotificationChannel that does not decode", "channel", ch.Metadata.Name, "err", err)
			continue
		}
		if !spec.Matches(env, side) {
			continue
		}
		args := jobs.NotifyArgs{Tenant: tenant, Namespace: ap.Metadata.Namespace, Approval: ap.Metadata.Name, Channel: ch.Metadata.Name}
		recipients := []string{""}
		if spec.Type == resource.ChannelEmail && spec.Email != nil {
			recipients = spec.Email.To
		}
		for _, r := range recipients {
			args.Recipient = r
			if err := s.cfg.Jobs.EnqueueTx(ctx, tx, args, int(spec.MaxAttempts)); err != nil {
				return fmt.Errorf("notifications: enqueue %s for %s: %w", ch.Metadata.Name, ap.Metadata.Name, err)
			}
		}
	}
	return nil
}

// refusal audits a refused inbound decision (bad signature, stale
// timestamp, unknown person): nothing is decided, but it is on record.
func (s *Service) refusal(ctx context.Context, tenant, ns, actor, verb, res, reason string) {
	if tenant == "" || store.CheckTenant(tenant) != nil {
		return
	}
	err := s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, audit.Record{Time: s.cfg.Now().UTC(), Tenant: tenant, Actor: actor, Verb: verb, Namespace: ns,
			Resource: res, Outcome: audit.OutcomeDenied, Policy: "system", Reason: reason})
		return err
	})
	if err != nil {
		s.log.ErrorContext(ctx, "audit a refused decision", "err", err)
	}
}

// memberPrincipal is the principal of the member with e-mail email, as a
// console session would carry it (app/oidc): owners are owners, everyone
// else a viewer whose namespace roles come from RoleBindings of
// "user:<email>". A person who is not a member gets auth.ErrForbidden.
func (s *Service) memberPrincipal(ctx context.Context, tenant, email string) (auth.Principal, error) {
	var m *store.Member
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		m, err = r.MemberGet(ctx, email)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return auth.Principal{}, fmt.Errorf("%w: %s is not a member of tenant %q", auth.ErrForbidden, email, tenant)
	}
	if err != nil {
		return auth.Principal{}, fmt.Errorf("read membership of %s: %w", email, err)
	}
	p := auth.Principal{Tenant: tenant, Subject: "user:" + m.Email, Kind: auth.KindUser, Email: m.Email,
		Role: auth.RoleViewer, Namespace: auth.AllNamespaces}
	if m.Owner {
		p.Role = auth.RoleOwner
	}
	return p, nil
}

// listChannels returns the NotificationChannels of namespace ns.
func listChannels(ctx context.Context, r store.Reader, ns string) ([]*resource.Object, error) {
	var out []*resource.Object
	p := store.ListParams{Kind: resource.KindNotificationChannel, Namespace: ns, Limit: store.MaxPageSize}
	for {
		page, err := r.ResourceList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("notifications: list channels of %s: %w", ns, err)
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		p.Continue = page.Continue
	}
}

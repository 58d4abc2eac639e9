package agbom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/jcs"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// StatusField is the field of a CompiledAgentManifest's status that holds
// its stored BOM.
const StatusField = "agbom"

// Config configures a Service.
type Config struct {
	// Store holds the manifests and their BOMs.
	Store store.Store
	// Bus receives AgBOMUpdated after it is committed; nil means none.
	Bus *events.Bus
	// Logger; nil discards.
	Logger *slog.Logger
	// WardenVersion is recorded in the BOMs of manifests this process
	// compiled; empty means BuildVersion().
	WardenVersion string
	// Now stamps the AgBOMUpdated events (never a BOM); nil means
	// time.Now.
	Now func() time.Time
}

// WithDefaults returns c with its empty fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.WardenVersion == "" {
		c.WardenVersion = BuildVersion()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports a missing dependency by field name.
func (c Config) Validate() error {
	if c.Store == nil {
		return errors.New("agbom: Config.Store is required")
	}
	return nil
}

// Service serves, regenerates and diffs AgBOMs. Its BOM of a manifest is
// generated when the manifest is compiled (Refresh, from the River job on
// AgentCompiled) and stored in the manifest's status, so that the BOM of
// an old generation keeps the versions and hashes its dependencies had
// then. Reads never write: a manifest whose stored BOM is missing or
// stale (its manifestSha differs) is answered with a BOM built on the fly.
type Service struct {
	cfg Config
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// Get returns the BOM of an agent's generation (0: the newest compiled)
// in namespace ns of tenant.
func (s *Service) Get(ctx context.Context, tenant, ns, agent string, generation int64) (*BOM, error) {
	var out *BOM
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		m, err := manifestOf(ctx, r, ns, agent, generation)
		if err != nil {
			return err
		}
		stored := storedBOM(m)
		sha, err := jcs.SHA256(m.Spec)
		if err != nil {
			return fmt.Errorf("agbom: manifest %s: %w", m.Metadata.Name, err)
		}
		if stored != nil && stored.ManifestSha == sha {
			out = stored
			return nil
		}
		out, err = Build(ctx, r, m, s.info(stored, sha, ""))
		return err
	})
	return out, err
}

// Diff compares the BOMs of generations from and to of an agent. to 0
// means the newest generation, from 0 the one before to.
func (s *Service) Diff(ctx context.Context, tenant, ns, agent string, from, to int64) (*Diff, error) {
	if from < 0 || to < 0 {
		return nil, fmt.Errorf("%w: generations are positive integers", ErrInvalid)
	}
	b, err := s.Get(ctx, tenant, ns, agent, to)
	if err != nil {
		return nil, err
	}
	if from == 0 {
		from = b.Generation - 1
		if from < 1 {
			return nil, fmt.Errorf("%w: agent %s has only generation %d; name both from and to", ErrInvalid, agent, b.Generation)
		}
	}
	a, err := s.Get(ctx, tenant, ns, agent, from)
	if err != nil {
		return nil, err
	}
	return Compare(a, b), nil
}

// Refresh regenerates and stores the BOM of an agent's generation (0: the
// newest compiled). compiledAt is the time of the AgentCompiled event that
// asked for it, if any. It reports whether the stored BOM changed, in
// which case it also recorded and published AgBOMUpdated.
func (s *Service) Refresh(ctx context.Context, tenant, ns, agent string, generation int64, compiledAt string) (*BOM, bool, error) {
	return s.refreshAgent(ctx, tenant, ns, agent, generation, compiledAt, false)
}

// refreshAgent is Refresh; with onlyCurrent it leaves a manifest alone
// unless its stored BOM describes the manifest's current content.
func (s *Service) refreshAgent(ctx context.Context, tenant, ns, agent string, generation int64, compiledAt string, onlyCurrent bool) (*BOM, bool, error) {
	var (
		out     *BOM
		changed bool
		ev      events.Event
	)
	// A concurrent rewrite of the manifest moves its resourceVersion
	// under us (the status write names the one read): read and try again.
	for attempt := 0; ; attempt++ {
		err := s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			m, err := manifestOf(ctx, tx, ns, agent, generation)
			if err != nil {
				return err
			}
			out, changed, ev, err = s.refresh(ctx, tx, tenant, m, compiledAt, onlyCurrent)
			return err
		})
		if errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		break
	}
	if changed && s.cfg.Bus != nil {
		s.cfg.Bus.Publish(ev)
	}
	if changed {
		s.cfg.Logger.InfoContext(ctx, "AgBOM updated", "tenant", tenant, "namespace", ns, "manifest", out.Manifest, "revision", out.Revision)
	}
	return out, changed, nil
}

// RefreshManifest is the refresh of the jobs Watch schedules, for a
// manifest named "<agent>-g<generation>". With compiledAt, the time of the
// AgentCompiled event that asked for it, it is Refresh. Without, it follows
// a change of a dependency and only updates a stored BOM that describes the
// manifest's current content: one not stored yet, or stale because the
// manifest was just rewritten, is left to the job of that compile, which
// knows the compile time. A manifest deleted since is not an error: there
// is nothing left to describe.
func (s *Service) RefreshManifest(ctx context.Context, tenant, ns, manifest, compiledAt string) error {
	agent, gen, ok := ParseManifestName(manifest)
	if !ok {
		return fmt.Errorf("%w: %q is not a manifest name (<agent>-g<generation>)", ErrInvalid, manifest)
	}
	_, _, err := s.refreshAgent(ctx, tenant, ns, agent, gen, compiledAt, compiledAt == "")
	if errors.Is(err, ErrNotFound) {
		// Deleted since it was compiled: nothing left to describe.
		s.cfg.Logger.DebugContext(ctx, "AgBOM refresh of a manifest that is gone", "tenant", tenant, "namespace", ns, "manifest", manifest)
		return nil
	}
	return err
}

func (s *Service) refresh(ctx context.Context, tx store.Tx, tenant string, m *resource.Object, compiledAt string, onlyCurrent bool) (*BOM, bool, events.Event, error) {
	stored := storedBOM(m)
	sha, err := jcs.SHA256(m.Spec)
	if err != nil {
		return nil, false, events.Event{}, fmt.Errorf("agbom: manifest %s: %w", m.Metadata.Name, err)
	}
	if onlyCurrent && (stored == nil || stored.ManifestSha != sha) {
		return stored, false, events.Event{}, nil
	}
	info := s.info(stored, sha, compiledAt)
	if stored != nil {
		info.Revision = stored.Revision
	}
	b, err := Build(ctx, tx, m, info)
	if err != nil {
		return nil, false, events.Event{}, err
	}
	if stored != nil && sameContent(stored, b) {
		return stored, false, events.Event{}, nil
	}
	if stored != nil {
		b.Revision = stored.Revision + 1
	}
	enc, err := resource.ToMap(b)
	if err != nil {
		return nil, false, events.Event{}, fmt.Errorf("agbom: encode: %w", err)
	}
	status := make(map[string]any, len(m.Status)+1)
	for k, v := range m.Status {
		status[k] = v
	}
	status[StatusField] = enc
	if _, err := tx.ResourceUpdateStatus(ctx, m.Key(), status, m.Metadata.ResourceVersion); err != nil {
		return nil, false, events.Event{}, fmt.Errorf("agbom: store the BOM of %s: %w", m.Metadata.Name, err)
	}
	ev, err := tx.EventInsert(ctx, events.Event{
		Type: events.AgBOMUpdated, Time: s.cfg.Now().UTC(), Tenant: tenant, Namespace: b.Namespace,
		Subject: resource.KindAgent + "/" + b.Agent,
		Data: map[string]any{
			"manifest": b.Manifest, "generation": b.Generation, "revision": b.Revision,
			"manifestSha": b.ManifestSha, "components": len(b.Components),
		},
	})
	if err != nil {
		return nil, false, events.Event{}, fmt.Errorf("agbom: record %s: %w", events.AgBOMUpdated, err)
	}
	return b, true, ev, nil
}

// info is what a new BOM of a manifest whose spec hashes to sha records.
// While the manifest is the one the stored BOM describes, its compile time
// and compiling Warden version stay those of the stored BOM; a new
// manifest content takes compiledAt (the AgentCompiled event's time, else
// the manifest's creationTimestamp) and this process's version.
func (s *Service) info(stored *BOM, sha, compiledAt string) Info {
	info := Info{WardenVersion: s.cfg.WardenVersion, CompiledAt: compiledAt}
	if stored != nil {
		info.Revision = stored.Revision + 1
		if stored.ManifestSha == sha {
			info.WardenVersion, info.CompiledAt = stored.WardenVersion, stored.CompiledAt
			// A refresh after a dependency change (which knows no compile
			// time) may have stored this content before the job of the
			// compile that wrote it ran: the later compile time wins.
			if compiledAt > stored.CompiledAt {
				info.CompiledAt = compiledAt
			}
		}
	}
	return info
}

// sameContent reports whether two BOMs say the same but for revision.
func sameContent(a, b *BOM) bool {
	x, y := *a, *b
	x.Revision, y.Revision = 0, 0
	xb, err1 := json.Marshal(&x)
	yb, err2 := json.Marshal(&y)
	return err1 == nil && err2 == nil && bytes.Equal(xb, yb)
}

// storedBOM decodes a manifest's stored BOM, nil when it has none that
// decodes.
func storedBOM(m *resource.Object) *BOM {
	raw, ok := m.Status[StatusField].(map[string]any)
	if !ok {
		return nil
	}
	enc, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var b BOM
	if err := json.Unmarshal(enc, &b); err != nil || b.Manifest != m.Metadata.Name {
		return nil
	}
	if b.Components == nil {
		b.Components = []Component{}
	}
	if b.Dependencies == nil {
		b.Dependencies = []Dependency{}
	}
	return &b
}

// manifestOf returns the manifest of an agent's generation, or of its
// newest compiled generation when generation is 0.
func manifestOf(ctx context.Context, r store.Reader, ns, agent string, generation int64) (*resource.Object, error) {
	if generation < 0 {
		return nil, fmt.Errorf("%w: generation must be a positive integer", ErrInvalid)
	}
	name := ""
	if generation == 0 {
		a, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindAgent, Namespace: ns, Name: agent})
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: agent %q not found in namespace %q", ErrNotFound, agent, ns)
		}
		if err != nil {
			return nil, fmt.Errorf("agbom: read agent %s: %w", agent, err)
		}
		name, _ = a.Status["compiledManifest"].(string)
		if name == "" {
			return nil, fmt.Errorf("%w: agent %q in namespace %q has no compiled manifest yet", ErrNotFound, agent, ns)
		}
	} else {
		name = compile.ManifestName(agent, generation)
	}
	m, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindCompiledAgentManifest, Namespace: ns, Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: agent %q in namespace %q has no compiled manifest %s", ErrNotFound, agent, ns, name)
	}
	if err != nil {
		return nil, fmt.Errorf("agbom: read manifest %s: %w", name, err)
	}
	return m, nil
}

// ParseManifestName splits "<agent>-g<generation>".
func ParseManifestName(name string) (agent string, generation int64, ok bool) {
	i := strings.LastIndex(name, "-g")
	if i <= 0 {
		return "", 0, false
	}
	gen, err := strconv.ParseInt(name[i+2:], 10, 64)
	if err != nil || gen < 1 {
		return "", 0, false
	}
	return name[:i], gen, true
}

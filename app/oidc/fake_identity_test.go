package oidc

// An in-memory stand-in for the identity methods of the store
// (store.IdentityStore, store.MemberTx, store.MemberReader) over a real
// store for everything else, used until both drivers implement them.

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

type fakeIdentity struct {
	store.Store
	mu       sync.Mutex
	tenants  map[string]store.TenantRecord
	members  map[string]map[string]store.Member // tenant → e-mail → member
	sessions map[string]store.Session
	// failMember, when set, fails every MemberUpsert (to test rollback).
	failMember error
}

func newFakeIdentity(st store.Store) *fakeIdentity {
	return &fakeIdentity{Store: st, tenants: map[string]store.TenantRecord{},
		members: map[string]map[string]store.Member{}, sessions: map[string]store.Session{}}
}

func (f *fakeIdentity) TenantCreate(_ context.Context, t store.TenantRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.tenants[t.ID]; ok {
		return store.ErrAlreadyExists
	}
	f.tenants[t.ID] = t
	return nil
}

func (f *fakeIdentity) TenantDelete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.tenants[id]; !ok {
		return store.ErrNotFound
	}
	delete(f.tenants, id)
	return nil
}

func (f *fakeIdentity) TenantGet(_ context.Context, id string) (*store.TenantRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tenants[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &t, nil
}

func (f *fakeIdentity) TenantList(context.Context) ([]store.TenantRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.TenantRecord
	for _, t := range f.tenants {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (f *fakeIdentity) MembershipsByEmail(_ context.Context, email string) ([]store.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Member
	for _, ms := range f.members {
		if m, ok := ms[email]; ok {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tenant < out[j].Tenant })
	return out, nil
}

func (f *fakeIdentity) SessionGet(_ context.Context, idHash string, now time.Time) (*store.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[idHash]
	if !ok || !now.Before(s.ExpiresAt) {
		return nil, store.ErrNotFound
	}
	return &s, nil
}

func (f *fakeIdentity) SessionInsert(_ context.Context, s store.Session) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions[s.IDHash] = s
	return nil
}

func (f *fakeIdentity) SessionDelete(_ context.Context, idHash string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, idHash)
	return nil
}

func (f *fakeIdentity) APIKeyTouch(context.Context, string, string, time.Time) error { return nil }
func (f *fakeIdentity) SigningKeyList(context.Context) ([]store.SigningKey, error) { return nil, nil }
func (f *fakeIdentity) SigningKeyInsert(context.Context, store.SigningKey) error   { return nil }
func (f *fakeIdentity) SigningKeyRetire(context.Context, string, time.Time, time.Time) error {
	return nil
}

func (f *fakeIdentity) View(ctx context.Context, tenant string, fn func(context.Context, store.Reader) error) error {
	return f.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		return fn(ctx, &fakeTx{Reader: r, f: f, tenant: tenant, staged: f.snapshot(tenant)})
	})
}

func (f *fakeIdentity) Update(ctx context.Context, tenant string, fn func(context.Context, store.Tx) error) error {
	var ft *fakeTx
	err := f.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		ft = &fakeTx{Tx: tx, Reader: tx, f: f, tenant: tenant, staged: f.snapshot(tenant)}
		return fn(ctx, ft)
	})
	if err == nil && ft != nil {
		f.mu.Lock()
		f.members[tenant] = ft.staged
		f.mu.Unlock()
	}
	return err
}

func (f *fakeIdentity) snapshot(tenant string) map[string]store.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := map[string]store.Member{}
	for k, v := range f.members[tenant] {
		c[k] = v
	}
	return c
}

// fakeTx adds member methods to a real transaction; its member changes are
// published only when the real transaction commits.
type fakeTx struct {
	store.Tx
	store.Reader
	f      *fakeIdentity
	tenant string
	staged map[string]store.Member
}

// Methods both embedded interfaces have are resolved explicitly.
func (t *fakeTx) ResourceGet(ctx context.Context, k resource.Key) (*resource.Object, error) {
	return t.Reader.ResourceGet(ctx, k)
}
func (t *fakeTx) ResourceList(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	return t.Reader.ResourceList(ctx, p)
}
func (t *fakeTx) EventList(ctx context.Context, after int64, limit int) ([]events.Event, error) {
	return t.Reader.EventList(ctx, after, limit)
}
func (t *fakeTx) AuditList(ctx context.Context, p store.AuditListParams) ([]audit.Record, error) {
	return t.Reader.AuditList(ctx, p)
}
func (t *fakeTx) CurrentVersion(ctx context.Context) (int64, error) {
	return t.Reader.CurrentVersion(ctx)
}

func (t *fakeTx) MemberUpsert(_ context.Context, m store.Member) error {
	if t.f.failMember != nil {
		return t.f.failMember
	}
	m.Tenant = t.tenant
	t.staged[m.Email] = m
	return nil
}

func (t *fakeTx) MemberDelete(_ context.Context, email string) error {
	if _, ok := t.staged[email]; !ok {
		return store.ErrNotFound
	}
	delete(t.staged, email)
	return nil
}

func (t *fakeTx) APIKeyRevoke(context.Context, string, time.Time) error {
	return errors.New("fake: APIKeyRevoke not implemented")
}

func (t *fakeTx) MemberList(context.Context) ([]store.Member, error) {
	var out []store.Member
	for _, m := range t.staged {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Email < out[j].Email })
	return out, nil
}

func (t *fakeTx) MemberGet(_ context.Context, email string) (*store.Member, error) {
	m, ok := t.staged[email]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &m, nil
}

func (t *fakeTx) APIKeyList(context.Context) ([]store.APIKey, error) { return nil, nil }

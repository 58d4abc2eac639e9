package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is used when TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns TEST_DATABASE_URL or DefaultURL.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// NewDatabase creates a fresh, empty database on the TEST_DATABASE_URL
// server and returns its URL (same user and options). The name is derived
// from the test binary (the package) plus a random suffix. The database is
// dropped, with any connections still open, in tb.Cleanup. Create one per
// test package or top-level test and isolate tests inside it by tenant:
// CREATE DATABASE costs a few hundred milliseconds.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: cannot reach Postgres at TEST_DATABASE_URL=%q: %v (start PostgreSQL or set TEST_DATABASE_URL)", admin, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()

	name := databaseName()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0"); err != nil {
		tb.Fatalf("pgtest: create database %s on TEST_DATABASE_URL=%q: %v", name, admin, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(context.Background()) }()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("pgtest: TEST_DATABASE_URL=%q is not a URL: %v", admin, err)
	}
	u.Path = "/" + name
	return u.String()
}

// databaseName is warden_test_<package>_<random>, within Postgres' 63-byte
// identifier limit.
func databaseName() string {
	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	var b strings.Builder
	for _, r := range strings.ToLower(pkg) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	p := b.String()
	if len(p) > 30 {
		p = p[:30]
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	return fmt.Sprintf("warden_test_%s_%s", p, hex.EncodeToString(suffix))
}

package sampleapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rlbench/rlbench/limiter"
)

// testPostgres returns the DSN of a throwaway database on the local
// PostgreSQL (RLBENCH_TEST_POSTGRES, default postgres://postgres@127.0.0.1:5432/test),
// dropped at cleanup. Without a reachable server the test is skipped, or
// fails when CI is "true".
func testPostgres(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	candidates := []string{os.Getenv("RLBENCH_TEST_POSTGRES")}
	if candidates[0] == "" {
		candidates = []string{
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
			"postgres://root@127.0.0.1:5432/test?sslmode=disable",
		}
	}
	var (
		admin *pgx.Conn
		base  string
		err   error
	)
	for _, dsn := range candidates {
		if admin, err = pgx.Connect(ctx, dsn); err == nil {
			base = dsn
			break
		}
	}
	if admin == nil {
		msg := "PostgreSQL unreachable (set RLBENCH_TEST_POSTGRES to a DSN of a server where the user may create databases): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "rlbench_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		admin.Close(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func TestPGKeysPlanChangeTakesEffect(t *testing.T) {
	dsn := testPostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for range 2 { // applying the migrations twice changes nothing
		if err := Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	var applied int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM rlbench_migrations").Scan(&applied); err != nil || applied != 1 {
		t.Fatalf("rlbench_migrations rows = %d (%v), want 1", applied, err)
	}
	insert := `INSERT INTO api_keys (name, key_hash, rate_limit_per_minute, rate_limit_burst, monthly_quota) VALUES ($1, $2, $3, $4, $5)`
	if _, err := conn.Exec(ctx, insert, "pg test", HashAPIKey("pg-key"), 0.001, 1, 0); err != nil {
		t.Fatal(err)
	}

	const refresh = 100 * time.Millisecond
	keys, err := OpenPGKeys(ctx, dsn, refresh, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	cfg, err := ParseConfig("test.yaml", []byte("plan_refresh: 100ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Instance = "pg"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{}
	clock.us.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	srv, err := NewServer(cfg, limiter.NewMemoryStore(limiter.WithClock(clock.Now)), keys, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &apiFixture{clock: clock, srv: srv}

	// Burst 1: one request, then 429.
	if w := f.do("GET", "/v1/data", bearer("pg-key")...); w.Code != 200 {
		t.Fatalf("first request: status = %d, want 200", w.Code)
	}
	if w := f.do("GET", "/v1/data", bearer("pg-key")...); w.Code != 429 {
		t.Fatalf("second request: status = %d, want 429", w.Code)
	}

	// The bound is refresh plus one query; the deadline leaves a wide
	// margin for a loaded machine, and the observed delay is logged.
	deadline := 10 * time.Second
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > deadline {
				t.Fatalf("%s: not in effect %v after the change (documented bound: plan_refresh %v plus one query)", what, deadline, refresh)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: in effect after %v", what, time.Since(start).Round(time.Millisecond))
	}
	if _, err := conn.Exec(ctx, "UPDATE api_keys SET rate_limit_burst = 5, rate_limit_per_minute = 60, monthly_quota = 100, updated_at = now() WHERE key_hash = $1", HashAPIKey("pg-key")); err != nil {
		t.Fatal(err)
	}
	waitFor("plan change", func() bool {
		w := f.do("GET", "/v1/limits", bearer("pg-key")...)
		var b Budget
		return json.Unmarshal(w.Body.Bytes(), &b) == nil && b.Burst == 5 && b.Limit == 60 && b.Monthly != nil && b.Monthly.Limit == 100
	})
	if w := f.do("GET", "/v1/data", bearer("pg-key")...); w.Code != 200 {
		t.Fatalf("after the plan change: status = %d, want 200", w.Code)
	}

	if _, err := conn.Exec(ctx, insert, "new", HashAPIKey("pg-new-key"), 60, 10, 0); err != nil {
		t.Fatal(err)
	}
	waitFor("new key", func() bool { return f.do("GET", "/v1/data", bearer("pg-new-key")...).Code == 200 })

	if _, err := conn.Exec(ctx, "DELETE FROM api_keys WHERE key_hash = $1", HashAPIKey("pg-key")); err != nil {
		t.Fatal(err)
	}
	waitFor("deleted key", func() bool { return f.do("GET", "/v1/data", bearer("pg-key")...).Code == 401 })
}

func TestPGKeysRejectsBadRows(t *testing.T) {
	dsn := testPostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		hash  string
		rate  float64
		burst int64
	}{
		{"raw key instead of hash", "pg-key", 60, 10},
		{"zero rate", HashAPIKey("a"), 0, 10},
		{"zero burst", HashAPIKey("b"), 60, 0},
	}
	for _, tt := range tests {
		_, err := conn.Exec(ctx, `INSERT INTO api_keys (key_hash, rate_limit_per_minute, rate_limit_burst) VALUES ($1, $2, $3)`, tt.hash, tt.rate, tt.burst)
		if err == nil {
			t.Errorf("%s: the table accepted the row", tt.name)
		}
	}
}

func TestOpenPGKeysUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens there.
	if _, err := OpenPGKeys(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", time.Second, nil); err == nil {
		t.Fatal("OpenPGKeys succeeded without a server")
	}
}

// TestSecretPostgresLeastPrivilege runs config/postgres-init.sql as the
// owner of a fresh database (as the compose postgres service does) and
// opens the key store as the role it creates: not a superuser, it reads
// api_keys and may not write, create or apply a migration, and the sample
// API starts on it all the same.
func TestSecretPostgresLeastPrivilege(t *testing.T) {
	dsn := testPostgres(t)
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed: it runs config/postgres-init.sql")
	}
	ctx := context.Background()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role, password := "rlbench_api_"+hex.EncodeToString(b[:]), "api-pw-"+hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the database is dropped
		admin.Exec(ctx, "DROP OWNED BY "+role)
		if _, err := admin.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
		admin.Close(ctx)
	})
	migrations, err := filepath.Abs("migrations")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(psql, "-X", "-q", "-d", dsn, "-f", "config/postgres-init.sql")
	cmd.Env = append(os.Environ(), "RLBENCH_API_DB_PASSWORD="+password, "RLBENCH_API_DB_ROLE="+role, "RLBENCH_MIGRATIONS_DIR="+migrations)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql -f config/postgres-init.sql: %v\n%s", err, out)
	}
	insert := `INSERT INTO api_keys (name, key_hash, rate_limit_per_minute, rate_limit_burst, monthly_quota) VALUES ($1, $2, $3, $4, $5)`
	if _, err := admin.Exec(ctx, insert, "pg test", HashAPIKey("pg-key"), 60, 10, 0); err != nil {
		t.Fatal(err)
	}
	var super bool
	if err := admin.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = $1", role).Scan(&super); err != nil || super {
		t.Fatalf("role %s: superuser %v (%v), want a plain role", role, super, err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	apiDSN := u.String()

	keys, err := OpenPGKeys(ctx, apiDSN, time.Minute, nil)
	if err != nil {
		t.Fatalf("OpenPGKeys as %s: %v", role, err)
	}
	defer keys.Close()
	if p, ok, _ := keys.Lookup(ctx, "pg-key"); !ok || p.Burst != 10 {
		t.Fatalf("Lookup(pg-key) = %+v, %v; want the plan of burst 10", p, ok)
	}
	conn, err := pgx.Connect(ctx, apiDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		"INSERT INTO api_keys (key_hash, rate_limit_per_minute, rate_limit_burst) VALUES ('" + HashAPIKey("x") + "', 1, 1)",
		"UPDATE api_keys SET rate_limit_burst = 1000",
		"DELETE FROM api_keys",
		"CREATE TABLE intruder (id int)",
		"DELETE FROM rlbench_migrations",
	} {
		_, err := conn.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("%s as %s: %v, want permission denied (42501)", stmt, role, err)
		}
	}
	// A migration the role may not apply says who should.
	if _, err := admin.Exec(ctx, "DELETE FROM rlbench_migrations"); err != nil {
		t.Fatal(err)
	}
	err = Migrate(ctx, conn)
	if err == nil || !strings.Contains(err.Error(), "apply sampleapi/migrations as the database owner") {
		t.Fatalf("Migrate as %s with a migration left: %v, want the owner hint", role, err)
	}
}

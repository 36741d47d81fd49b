package sampleapi

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rlbench/rlbench/limiter/redisstore"
)

// migrations are the SQL files that create the key store's schema, applied
// in name order by Migrate.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the pg_advisory_lock key that serialises Migrate across
// instances starting at once.
const migrationLock = 0x726c62656e6368 // "rlbench"

// Migrate applies the embedded migrations that conn's database has not yet
// recorded in rlbench_migrations, each in its own transaction, under an
// advisory lock so that instances starting together apply each once. When
// every migration is recorded it only reads: a role that may read api_keys
// and rlbench_migrations and nothing more (as config/postgres-init.sql
// creates) passes, and such a role meeting a new migration gets an error
// saying to apply it as the schema's owner.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLock)) //nolint:errcheck // the lock dies with the session anyway
	var recorded bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('rlbench_migrations') IS NOT NULL").Scan(&recorded); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !recorded {
		if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS rlbench_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("migrate: %w%s", err, ownerHint(err))
		}
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		var applied bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM rlbench_migrations WHERE version = $1)", name).Scan(&applied); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if applied {
			continue
		}
		sql, err := migrations.ReadFile(name)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Conn().PgConn().Exec(ctx, string(sql)).ReadAll(); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO rlbench_migrations (version) VALUES ($1)", name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: %w%s", name, err, ownerHint(err))
		}
	}
	return nil
}

// ownerHint is the fix for a migration this role may not apply.
func ownerHint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
		return "; this role may not change the schema (as it should not): apply sampleapi/migrations as the database owner"
	}
	return ""
}

// PGKeys is a KeyStore reading table api_keys (see migrations/) from
// PostgreSQL. Keys are stored by SHA-256 (HashAPIKey) only. Every plan is
// cached in memory and the whole table reloaded every refresh interval, so
// a plan changed, added or deleted in the table takes effect within the
// interval plus the duration of one reload query. While PostgreSQL cannot
// be reached the last plans loaded stay in force and each failed reload is
// logged; the bound then starts again from the next successful reload.
//
// Lookups never touch PostgreSQL. PGKeys is safe for concurrent use.
type PGKeys struct {
	dsn     string
	refresh time.Duration
	log     *slog.Logger
	plans   atomic.Pointer[map[string]Plan]

	mu   sync.Mutex // guards conn
	conn *pgx.Conn

	stop context.CancelFunc
	done chan struct{}
}

// OpenPGKeys connects to the database at dsn, applies the migrations, loads
// every key and starts reloading them every refresh (DefaultPlanRefresh
// when 0) until Close. Errors: connection, migration or first load failure.
func OpenPGKeys(ctx context.Context, dsn string, refresh time.Duration, logger *slog.Logger) (*PGKeys, error) {
	if refresh <= 0 {
		refresh = DefaultPlanRefresh
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	k := &PGKeys{dsn: dsn, refresh: refresh, log: logger, done: make(chan struct{})}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %s", redisstore.Redact(err.Error(), dsn))
	}
	k.conn = conn
	if err := Migrate(ctx, conn); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := k.Reload(ctx); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	k.stop = stop
	go k.loop(loopCtx)
	return k, nil
}

func (k *PGKeys) loop(ctx context.Context) {
	defer close(k.done)
	tick := time.NewTicker(k.refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			rctx, cancel := context.WithTimeout(ctx, max(k.refresh, 5*time.Second))
			if err := k.Reload(rctx); err != nil && !errors.Is(err, context.Canceled) {
				k.log.Warn("reload API keys failed; keeping the last plans", "err", err)
			}
			cancel()
		}
	}
}

// Reload reads every key's plan from the table and replaces the cache. On
// a failed query it reconnects on the next call.
func (k *PGKeys) Reload(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn == nil || k.conn.IsClosed() {
		conn, err := pgx.Connect(ctx, k.dsn)
		if err != nil {
			return fmt.Errorf("reconnect to postgres: %s", redisstore.Redact(err.Error(), k.dsn))
		}
		k.conn = conn
	}
	rows, err := k.conn.Query(ctx, `SELECT key_hash, name, rate_limit_per_minute, rate_limit_burst, monthly_quota FROM api_keys`)
	if err != nil {
		k.drop(ctx)
		return fmt.Errorf("load API keys: %w", err)
	}
	plans := map[string]Plan{}
	var (
		hash string
		p    Plan
	)
	_, err = pgx.ForEachRow(rows, []any{&hash, &p.Name, &p.PerMinute, &p.Burst, &p.MonthlyQuota}, func() error {
		plans[hash] = p
		return nil
	})
	if err != nil {
		k.drop(ctx)
		return fmt.Errorf("load API keys: %w", err)
	}
	k.plans.Store(&plans)
	return nil
}

// drop closes a connection that failed, so the next Reload reconnects.
func (k *PGKeys) drop(ctx context.Context) {
	k.conn.Close(context.WithoutCancel(ctx))
	k.conn = nil
}

// Lookup implements KeyStore from the cache; it never fails.
func (k *PGKeys) Lookup(_ context.Context, apiKey string) (Plan, bool, error) {
	p, ok := (*k.plans.Load())[HashAPIKey(apiKey)]
	return p, ok, nil
}

// Close stops the reloads and closes the connection.
func (k *PGKeys) Close() error {
	k.stop()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn != nil {
		return k.conn.Close(context.Background())
	}
	return nil
}

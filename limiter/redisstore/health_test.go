package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// requirePass makes srv require password until the end of t (when it is
// lifted again, before the server's own cleanup scans its keys).
func requirePass(t *testing.T, srv *redistest.Server, password string) {
	t.Helper()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	if err := admin.ConfigSet(ctx, "requirepass", password).Err(); err != nil {
		t.Fatalf("CONFIG SET requirepass: %v", err)
	}
	admin.Close()
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: password, DisableIdentity: true})
		defer c.Close()
		if err := c.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
			t.Errorf("lift requirepass: %v", err)
		}
	})
}

// TestAuthErrors: a refused password reads as an authentication error with
// its fix, batched or not, and never as an unexpected reply.
func TestAuthErrors(t *testing.T) {
	srv := redistest.StartForTest(t)
	requirePass(t, srv, "right-password")
	lim := limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 10}
	cases := []struct {
		name, password, want string
		opts                 []redisstore.Option
	}{
		{"wrong password, batched", "wrong-password", "redis: authentication failed (WRONGPASS): check the password in the URL", nil},
		{"wrong password, one call per round trip", "wrong-password", "redis: authentication failed (WRONGPASS): check the password in the URL",
			[]redisstore.Option{redisstore.WithBatching(1, 1)}},
		{"no password", "", "redis: authentication failed (NOAUTH): the server requires a password", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: tc.password, DisableIdentity: true, MaxRetries: -1})
			defer client.Close()
			store := redisstore.New(client, tc.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := store.Allow(ctx, "k", lim)
			if !errors.Is(err, redisstore.ErrAuth) {
				t.Fatalf("Allow error = %v, want one wrapping ErrAuth", err)
			}
			if errors.Is(err, redisstore.ErrUnexpectedReply) {
				t.Errorf("Allow error = %v, also an unexpected reply", err)
			}
			if got := err.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("Allow error = %q, want it to say %q", got, tc.want)
			}
			if err := redisstore.CheckAuth(client.Ping(ctx).Err()); !errors.Is(err, redisstore.ErrAuth) {
				t.Errorf("CheckAuth(PING error) = %v, want ErrAuth", err)
			}
		})
	}
	other := errors.New("dial tcp: connection refused")
	if got := redisstore.CheckAuth(other); got != other {
		t.Errorf("CheckAuth(%v) = %v, want it unchanged", other, got)
	}
	if redisstore.CheckAuth(nil) != nil {
		t.Error("CheckAuth(nil) != nil")
	}
}

// TestEvictionRisk runs real servers with each kind of memory policy.
func TestEvictionRisk(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // in the risk; "" means none
	}{
		{"allkeys-lru with maxmemory", []string{"--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"}, "maxmemory 10485760 bytes with maxmemory-policy allkeys-lru, which evicts any key"},
		{"volatile-ttl with maxmemory", []string{"--maxmemory", "10mb", "--maxmemory-policy", "volatile-ttl"}, "volatile-ttl, which evicts keys with a TTL, and every limiter key has one"},
		{"noeviction", []string{"--maxmemory", "10mb", "--maxmemory-policy", "noeviction"}, ""},
		{"allkeys-lru without maxmemory", []string{"--maxmemory", "0", "--maxmemory-policy", "allkeys-lru"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			srv, err := redistest.Start(ctx, redistest.Options{Args: tc.args})
			if err != nil {
				if errors.Is(err, redistest.ErrNotInstalled) {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			defer srv.Stop()
			client := newClient(t, srv.Addr())
			got, err := redisstore.EvictionRisk(ctx, client)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("EvictionRisk = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://:hunter2@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"rediss://app:hunter2@redis.example:6380", "rediss://app:xxxxx@redis.example:6380"},
		{"redis://127.0.0.1:6379/0?password=hunter2&dial_timeout=1s", "redis://127.0.0.1:6379/0?password=xxxxx&dial_timeout=1s"},
		{"redis://:hun@ter2@127.0.0.1:bad/0", "redis://:xxxxx@127.0.0.1:bad/0"}, // does not parse
		{"redis://:p%zz@127.0.0.1:6379", "redis://:xxxxx@127.0.0.1:6379"},       // bad escape: does not parse
		{"postgres://api:s3cr%2Ft@db:5432/keys?sslmode=disable", "postgres://api:xxxxx@db:5432/keys?sslmode=disable"},
		{"host=db user=api password=s3cret dbname=keys", "host=db user=api password=xxxxx dbname=keys"},
		{"host=db password='s3 cret' dbname=keys", "host=db password=xxxxx dbname=keys"},
	}
	for _, tc := range cases {
		if got := redisstore.RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	cases := []struct {
		msg   string
		conns []string
		want  string
	}{
		{`parse "redis://:hunter2@127.0.0.1:bad/0": invalid port`, []string{"redis://:hunter2@127.0.0.1:bad/0"}, `parse "redis://:xxxxx@127.0.0.1:bad/0": invalid port`},
		{"user a/b? said p%2Fw and p/w", []string{"redis://:p%2Fw@h:1"}, "user a/b? said xxxxx and xxxxx"},
		{"password=s3 cret", []string{"host=db password='s3 cret'"}, "password=xxxxx"},
		{"nothing to hide", []string{"", "redis://h:1"}, "nothing to hide"},
	}
	for _, tc := range cases {
		if got := redisstore.Redact(tc.msg, tc.conns...); got != tc.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", tc.msg, tc.conns, got, tc.want)
		}
	}
}

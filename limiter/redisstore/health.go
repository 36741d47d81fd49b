package redisstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrAuth is matched by errors.Is for every error of a Store (and of
// CheckAuth) caused by Redis refusing the client's credentials: a WRONGPASS
// reply (a wrong password or user) or a NOAUTH reply (Redis requires a
// password and none was sent).
var ErrAuth = errors.New("redis: authentication failed")

// authError is ErrAuth with the reply that caused it and the fix.
type authError struct {
	code string // WRONGPASS or NOAUTH
	err  error  // Redis's reply
}

func (e *authError) Error() string {
	if e.code == "NOAUTH" {
		return ErrAuth.Error() + " (NOAUTH): the server requires a password; put it in the URL, as in redis://:PASSWORD@HOST:6379/0"
	}
	return ErrAuth.Error() + " (" + e.code + "): check the password in the URL"
}

func (e *authError) Is(target error) bool { return target == ErrAuth }
func (e *authError) Unwrap() error        { return e.err }

// CheckAuth returns err unchanged unless it is Redis's WRONGPASS or NOAUTH
// reply, which it returns as an error wrapping ErrAuth that says so and how
// to fix it, instead of the server's terse text. A nil err gives nil.
func CheckAuth(err error) error {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return err
	}
	msg := rerr.Error()
	for _, code := range []string{"WRONGPASS", "NOAUTH"} {
		if strings.HasPrefix(msg, code) {
			return &authError{code: code, err: err}
		}
	}
	return err
}

// evictingPolicies are the maxmemory policies that can evict a limiter's
// keys, with the reason: allkeys-* evict any key, and volatile-* evict keys
// with a TTL, which every key a Store writes has.
var evictingPolicies = map[string]string{
	"allkeys-lru":     "evicts any key",
	"allkeys-lfu":     "evicts any key",
	"allkeys-random":  "evicts any key",
	"volatile-lru":    "evicts keys with a TTL, and every limiter key has one",
	"volatile-lfu":    "evicts keys with a TTL, and every limiter key has one",
	"volatile-random": "evicts keys with a TTL, and every limiter key has one",
	"volatile-ttl":    "evicts keys with a TTL, and every limiter key has one",
}

// EvictionFix is what to do about an eviction risk EvictionRisk reports.
const EvictionFix = "CONFIG SET maxmemory-policy noeviction (and set it in redis.conf), " +
	"or give the limiter a Redis of its own without maxmemory"

// EvictionRisk reads maxmemory and maxmemory-policy from the Redis behind
// client (INFO memory, or CONFIG GET where INFO lacks them) and describes
// the risk that Redis evicts the limiter's state when memory runs short, as
// in "maxmemory 10485760 bytes with maxmemory-policy allkeys-lru, which
// evicts any key: ...": an evicted key's budget starts full again, so an
// exhausted client is admitted anew (field case C16). It returns "" when
// nothing can be evicted: maxmemory 0 (no limit) or a policy that evicts
// nothing (noeviction). Errors: Redis's (a user allowed neither INFO nor
// CONFIG GET, a network error), or a reply it cannot read. On a cluster
// client the answer is one node's.
func EvictionRisk(ctx context.Context, client redis.UniversalClient) (string, error) {
	maxmemory, policy, err := memoryPolicy(ctx, client)
	if err != nil {
		return "", err
	}
	why, evicts := evictingPolicies[policy]
	if maxmemory == 0 || !evicts {
		return "", nil
	}
	return fmt.Sprintf("maxmemory %d bytes with maxmemory-policy %s, which %s: when memory runs short, "+
		"an exhausted client's limiter state can be evicted and its budget start full again", maxmemory, policy, why), nil
}

// memoryPolicy reads maxmemory and maxmemory-policy.
func memoryPolicy(ctx context.Context, client redis.UniversalClient) (int64, string, error) {
	info, infoErr := client.Info(ctx, "memory").Result()
	if infoErr == nil {
		fields := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(info))
		for sc.Scan() {
			if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
				fields[k] = v
			}
		}
		if mm, ok := fields["maxmemory"]; ok {
			if policy, ok := fields["maxmemory_policy"]; ok {
				n, err := strconv.ParseInt(mm, 10, 64)
				if err != nil {
					return 0, "", fmt.Errorf("redis INFO memory: maxmemory %q: %w", mm, err)
				}
				return n, policy, nil
			}
		}
	}
	cfg, err := client.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return 0, "", fmt.Errorf("read maxmemory-policy: %w", CheckAuth(errors.Join(infoErr, err)))
	}
	n, err := strconv.ParseInt(cfg["maxmemory"], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("redis CONFIG GET maxmemory %q: %w", cfg["maxmemory"], err)
	}
	return n, cfg["maxmemory-policy"], nil
}

// Redacted stands for a password removed from a URL or a message.
const Redacted = "xxxxx"

var (
	// userinfoPassword finds "scheme://user:PASSWORD@" where url.Parse
	// cannot (a malformed URL); the password runs to the last "@".
	userinfoPassword = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:@/?#]*:)(.*)@`)
	// paramPassword finds a password given as a parameter: a URL's query
	// (?password=...) or a key/value DSN (password=... or password='...').
	paramPassword = regexp.MustCompile(`(?i)(\bpassword=)('(?:[^'\\]|\\.)*'|[^\s&]*)`)
)

// RedactURL returns a Redis or PostgreSQL connection string (a URL or a
// key/value DSN such as "host=db password=..."), with every password in it
// replaced by Redacted: the userinfo's and a password parameter's. A URL
// that does not parse is redacted by pattern, so that a malformed URL never
// shows its password in an error.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.Scheme != "" {
		raw = u.Redacted()
	} else {
		raw = userinfoPassword.ReplaceAllString(raw, "${1}"+Redacted+"@")
	}
	return paramPassword.ReplaceAllString(raw, "${1}"+Redacted)
}

// Redact returns s with the passwords of the connection strings conns
// (see RedactURL) replaced by Redacted wherever they appear, as they are
// and URL-escaped: for a driver's error or a log line that may quote what
// it was given. Empty connection strings are skipped.
func Redact(s string, conns ...string) string {
	for _, c := range conns {
		for _, secret := range passwords(c) {
			s = strings.ReplaceAll(s, secret, Redacted)
			if esc := url.QueryEscape(secret); esc != secret {
				s = strings.ReplaceAll(s, esc, Redacted)
			}
			if esc := url.PathEscape(secret); esc != secret {
				s = strings.ReplaceAll(s, esc, Redacted)
			}
		}
	}
	return s
}

// passwords returns the passwords in a connection string, decoded and as written.
func passwords(conn string) []string {
	if conn == "" {
		return nil
	}
	var out []string
	if u, err := url.Parse(conn); err == nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		if p := u.Query().Get("password"); p != "" {
			out = append(out, p)
		}
	}
	if m := userinfoPassword.FindStringSubmatch(conn); m != nil {
		out = append(out, m[2])
		if p, err := url.PathUnescape(m[2]); err == nil {
			out = append(out, p)
		}
	}
	for _, m := range paramPassword.FindAllStringSubmatch(conn, -1) {
		out = append(out, m[2], strings.Trim(m[2], "'"))
	}
	nonEmpty := out[:0]
	for _, p := range out {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	return nonEmpty
}

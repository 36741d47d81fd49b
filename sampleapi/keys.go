package sampleapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// Plan is the rate-limit plan of an API key: a per-minute tier and an
// optional monthly quota, applied together to every request.
type Plan struct {
	// Name labels the key for people; it is never the key itself.
	Name string
	// PerMinute is the sustained rate in units per minute.
	PerMinute float64
	// Burst is the most units admitted at once.
	Burst int64
	// MonthlyQuota is the units admitted per MonthPeriod; 0 means none.
	MonthlyQuota int64
}

// Tier names, the policy names in RateLimit fields and storage keys.
const (
	TierMinute = "minute"
	TierMonth  = "month"
)

// Limits returns the plan's limits: the per-minute tier under algorithm alg
// and, when MonthlyQuota is set, a fixed window of MonthPeriod. prefix is
// prepended to the tier names ("anon-" for anonymous callers).
func (p Plan) Limits(alg limiter.Algorithm, prefix string) []limiter.Limit {
	limits := []limiter.Limit{{
		Name: prefix + TierMinute, Algorithm: alg, Rate: p.PerMinute, Period: time.Minute, Burst: p.Burst,
	}}
	if p.MonthlyQuota > 0 {
		month := limiter.Window(limiter.FixedWindow, p.MonthlyQuota, MonthPeriod)
		month.Name = prefix + TierMonth
		limits = append(limits, month)
	}
	return limits
}

// KeyStore finds the plan of an API key. Implementations are safe for
// concurrent use.
type KeyStore interface {
	// Lookup returns the plan of apiKey and whether the key exists. An error
	// means the store could not answer.
	Lookup(ctx context.Context, apiKey string) (Plan, bool, error)
}

// HashAPIKey is the form in which API keys are stored and compared: the
// SHA-256 of the key in lowercase hex.
func HashAPIKey(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return hex.EncodeToString(sum[:])
}

// StaticKeys is a KeyStore over a fixed set of keys, held by their SHA-256.
// It is immutable and safe for concurrent use.
type StaticKeys struct{ plans map[string]Plan }

// NewStaticKeys returns the KeyStore of the configured keys.
func NewStaticKeys(keys []KeyConfig) *StaticKeys {
	s := &StaticKeys{plans: make(map[string]Plan, len(keys))}
	for _, k := range keys {
		s.plans[HashAPIKey(k.Key)] = Plan{
			Name: k.Name, PerMinute: k.RateLimitPerMinute, Burst: k.RateLimitBurst, MonthlyQuota: k.MonthlyQuota,
		}
	}
	return s
}

// Lookup implements KeyStore; it never fails.
func (s *StaticKeys) Lookup(_ context.Context, apiKey string) (Plan, bool, error) {
	p, ok := s.plans[HashAPIKey(apiKey)]
	return p, ok, nil
}

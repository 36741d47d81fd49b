package sampleapi

import (
	"strings"
	"testing"
)

// TestAnyKeyPlan: keys the configuration does not list take any_key's
// plan on every route, a listed key keeps its own, and the budget
// endpoint reports the plan each has.
func TestAnyKeyPlan(t *testing.T) {
	f := newAPI(t, `
any_key: true
any_key_plan: {rate_limit_per_minute: 60, rate_limit_burst: 2}
extra_routes:
  - path: /api/items
keys:
  - {key: pro-0000, rate_limit_per_minute: 600, rate_limit_burst: 4}
`)
	steps := []struct {
		path string
		key  string
		want int
	}{
		{"/api/items", "key-0000", 200},
		{"/v1/data", "key-0000", 200}, // one plan over every route
		{"/api/items", "key-0000", 429},
		{"/api/items", "key-0001", 200}, // another key, its own budget
		{"/api/items", "pro-0000", 200},
		{"/api/items", "pro-0000", 200},
		{"/api/items", "pro-0000", 200},
		{"/api/items", "pro-0000", 200},
		{"/api/items", "pro-0000", 429},
	}
	for i, s := range steps {
		if w := f.do("GET", s.path, bearer(s.key)...); w.Code != s.want {
			t.Fatalf("step %d %s as %s: status = %d, want %d (%s)", i, s.path, s.key, w.Code, s.want, w.Body)
		}
	}
	if w := f.do("GET", "/v1/limits", bearer("key-0002")...); w.Code != 200 || !strings.Contains(w.Body.String(), `"limit":60,"remaining":2`) {
		t.Errorf("budget of an unlisted key: %d %s; want any_key's plan, untouched", w.Code, w.Body)
	}
}

func TestAnyKeyPlanConfigErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"any_key_plan: {rate_limit_per_minute: 60, rate_limit_burst: 2}\n", `test.yaml:1: any_key_plan: applies to the keys any_key accepts; set any_key: true`},
		{"any_key: true\nany_key_plan: {rate_limit_per_minute: 60, rate_limit_burst: 0}\n", `test.yaml:2: any_key_plan.rate_limit_burst: 0 must be at least 1`},
	}
	for _, tt := range tests {
		cfg, err := ParseConfig("test.yaml", []byte(tt.yaml))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("config %q: error = %v\nwant prefix %q", tt.yaml, err, tt.want)
		}
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate counts planned requests as the run sends them: "up to" where a
// phase's plan is an upper bound (a Retry-After probe, clients that honour
// Retry-After), so that a run sending fewer is not read as a shortfall.
func TestValidatePlanned(t *testing.T) {
	tests := []struct {
		scenario, want string
	}{
		{"quickstart", "valid (quickstart, 2 phases, up to 991 requests planned)"},
		{"retry-after", "up to 341 requests planned)"},
		{"boundary-burst", "valid (boundary-burst, 6 phases, 120 requests planned)"},
		{"concurrency", "valid (concurrency, 1 phase, 100 requests planned)"},
	}
	one := filepath.Join(t.TempDir(), "one.yaml")
	err := os.WriteFile(one, []byte(`name: one
description: One request, counted in the singular.
target:
  instances: 1
  routes:
    - path: /api/items
      policies: ["gcra:10/1m,burst=10"]
identities:
  count: 1
traffic:
  - kind: burst
    name: single
    requests: 1
    spread: 5ms
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct{ scenario, want string }{one, "valid (one, 1 phase, 1 request planned)"})
	for _, tt := range tests {
		t.Run(filepath.Base(tt.scenario), func(t *testing.T) {
			var out strings.Builder
			if err := (&validateCommand{stdout: &out}).Run(context.Background(), []string{tt.scenario}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("validate printed %q, want %q", out.String(), tt.want)
			}
		})
	}
}

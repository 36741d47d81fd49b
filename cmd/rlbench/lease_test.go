package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lease in a rule of several limits is refused where the command line
// assembles a rule (--claim, check --policy) and where a scenario does
// (validate), each naming the place and the fix, with exit 2.
func TestLeaseInRuleOfSeveralLimits(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(scenario, []byte(`name: two
description: a lease beside another policy
target:
  instances: 1
  routes:
    - path: /api/items
      policies: ["fixed_window:1000/1m", "gcra:50/1s,burst=20,lease=5/200ms"]
traffic:
  - {kind: burst, requests: 5}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	history := filepath.Join(dir, "h.jsonl")
	if err := os.WriteFile(history, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const why = "a lease applies to a rule of one limit, and this one has 2; remove lease= or split the route's policies"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"validate", []string{"validate", scenario},
			scenario + ":7: target.routes[0].policies[1]: invalid limit: lease: lease=5/200ms: " + why},
		{"run --claim", []string{"run", "--claim", "/api/items=fixed_window:1000/1m", "--claim", "/api/items=gcra:50/1s,burst=20,lease=5/200ms", "quickstart"},
			"--claim /api/items=gcra:50/1s,burst=20,lease=5/200ms: invalid limit: lease: lease=5/200ms: " + why + " (each --claim of /api/items adds a limit to its one rule)"},
		{"check --policy", []string{"check", "--policy", "gcra:50/1s,burst=20,lease=5/200ms", "--policy", "fixed_window:1000/1m", history},
			"--policy gcra:50/1s,burst=20,lease=5/200ms: invalid policy: lease: lease=5/200ms: " + why + " (each --policy flag adds a limit to one rule)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if got := run(context.Background(), tt.args, &stderr); got != exitInvalid {
				t.Fatalf("exit code = %d, want %d\n%s", got, exitInvalid, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr:\n%s\nwant it to hold:\n%s", stderr.String(), tt.want)
			}
		})
	}
}

package scenarios

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// TestParseUnexpanded: a header's ${NAME} references stay as written and
// are named, set or not, where Parse needs them set.
func TestParseUnexpanded(t *testing.T) {
	const unset = "RLBENCH_TEST_UNSET_TOKEN"
	if _, ok := os.LookupEnv(unset); ok {
		t.Skipf("%s is set in the environment", unset)
	}
	t.Setenv("RLBENCH_TEST_SET_REGION", "eu")
	src := []byte(`name: env
description: headers from the environment
target:
  external: [http://127.0.0.1:9]
  routes:
    - path: /v1/orders
      headers:
        Authorization: "Bearer ${` + unset + `}"
        X-Region: "${RLBENCH_TEST_SET_REGION}-1"
        Accept: application/json
      policies: ["gcra:10/1s,burst=10"]
traffic:
  - {kind: burst, requests: 5}
`)
	if _, err := Parse("env.yaml", src); err == nil {
		t.Fatalf("Parse took a header whose variable %s is unset", unset)
	}
	sc, err := ParseUnexpanded("env.yaml", src)
	if err != nil {
		t.Fatalf("ParseUnexpanded: %v", err)
	}
	tests := []struct {
		name, value string
		env         []string
	}{
		{"Accept", "application/json", nil},
		{"Authorization", "Bearer ${" + unset + "}", []string{unset}},
		{"X-Region", "${RLBENCH_TEST_SET_REGION}-1", []string{"RLBENCH_TEST_SET_REGION"}},
	}
	hs := sc.Target.Routes[0].Headers
	if got, want := len(hs), len(tests); got != want {
		t.Fatalf("%d headers, want %d", got, want)
	}
	for i, tt := range tests {
		h := hs[i]
		if h.Name != tt.name || h.Value.Reveal() != tt.value || !slices.Equal(h.Env, tt.env) {
			t.Errorf("header %d = %s: %q env %v, want %s: %q env %v", i, h.Name, h.Value.Reveal(), h.Env, tt.name, tt.value, tt.env)
		}
	}
	if got, want := sc.Source, "env.yaml"; got != want {
		t.Errorf("Source = %q, want %q", got, want)
	}
}

// TestReadShipped: a shipped scenario's file as it ships, and a name none
// has as ErrNotFound.
func TestReadShipped(t *testing.T) {
	source, data, err := ReadShipped("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if source != "embedded:quickstart.yaml" || string(data) != string(want) {
		t.Errorf("ReadShipped(quickstart) = %q and %d bytes, want embedded:quickstart.yaml and quickstart.yaml's %d", source, len(data), len(want))
	}
	if _, _, err := ReadShipped("quickstrat"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadShipped(quickstrat) error = %v, want ErrNotFound", err)
	}
}

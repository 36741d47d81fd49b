package mutation

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/sampleapi/faulty"
	"github.com/rlbench/rlbench/scenarios"
)

// TestScenarios parses every mutation scenario: each is named after a
// faulty variant, and its name key is that name.
func TestScenarios(t *testing.T) {
	entries, err := fs.Glob(files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no mutation scenario is embedded")
	}
	variants := map[string]bool{}
	for _, n := range faulty.Names() {
		variants[n] = true
	}
	for _, file := range entries {
		name := strings.TrimSuffix(file, ".yaml")
		t.Run(name, func(t *testing.T) {
			if !variants[name] {
				t.Fatalf("%s is named after no faulty variant; the variants are %v", file, faulty.Names())
			}
			sc, err := Scenario(name)
			if err != nil {
				t.Fatalf("Scenario(%q): %v", name, err)
			}
			if got, want := sc.Name, name; got != want {
				t.Errorf("name = %q, want %q (the file's name)", got, want)
			}
		})
	}
}

func TestScenarioNotFound(t *testing.T) {
	if _, err := Scenario("no-such-variant"); !errors.Is(err, scenarios.ErrNotFound) {
		t.Fatalf("Scenario(no-such-variant) error = %v, want one wrapping ErrNotFound", err)
	}
}

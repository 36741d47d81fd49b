package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUsageDescribesEveryCommand: the top-level usage lists every command
// with its one-line description.
func TestUsageDescribesEveryCommand(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), nil, &out); code != exitInvalid {
		t.Fatalf("no arguments: exit %d, want %d", code, exitInvalid)
	}
	for name := range commands {
		desc := summaries[name]
		if desc == "" {
			t.Errorf("command %q has no description in summaries", name)
			continue
		}
		if !strings.Contains(out.String(), desc) {
			t.Errorf("usage lacks %q's description:\n%s", name, out.String())
		}
	}
	if code := run(context.Background(), []string{"frobnicate"}, &out); code != exitInvalid || !strings.Contains(out.String(), `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: exit %d, output:\n%s", code, out.String())
	}
}

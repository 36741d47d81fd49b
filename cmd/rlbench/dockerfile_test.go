package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfilePinsBaseImages: every stage of the Dockerfile starts from
// an image pinned by digest, so a rebuild gets the bytes that were
// reviewed, whatever the tag has moved to since.
func TestDockerfilePinsBaseImages(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	pinned := regexp.MustCompile(`^FROM\s+\S+@sha256:[0-9a-f]{64}(\s+AS\s+\S+)?$`)
	stages := 0
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "FROM ") {
			continue
		}
		stages++
		if !pinned.MatchString(strings.TrimSpace(line)) {
			t.Errorf("Dockerfile:%d: %q is not pinned by digest (IMAGE:TAG@sha256:...)", i+1, line)
		}
	}
	if stages < 2 {
		t.Fatalf("found %d FROM lines, want the build and the runtime stage", stages)
	}
}

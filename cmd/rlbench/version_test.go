package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install @version: no VCS data", &debug.BuildInfo{Main: debug.Module{Path: "github.com/rlbench/rlbench", Version: "v1.2.3"}},
			"rlbench v1.2.3 (go1.26.0)"},
		{"go install @commit: a pseudo-version names the revision", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101120000-1b8651ffbfe0"}},
			"rlbench v0.0.0-20260101120000-1b8651ffbfe0 (commit 1b8651ffbfe0, go1.26.0)"},
		{"a build in a checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("5830657d6ad7aa", "true")},
			"rlbench devel (commit 5830657d6ad7aa+dirty, go1.26.0)"},
		{"a release built in its checkout", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("abc123", "false")},
			"rlbench v1.2.3 (commit abc123, go1.26.0)"},
		{"nothing recorded", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "rlbench devel (go1.26.0)"},
		{"no build information", nil, "rlbench devel (go1.26.0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionLine(tc.bi, "go1.26.0"); got != tc.want {
				t.Errorf("versionLine = %q, want %q", got, tc.want)
			}
		})
	}
}

//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/peers"
)

// TestRunSkipsMissingPeer runs a peer scenario on a machine without the
// peer: the scenario is reported as skipped, with how to install the peer,
// and the run neither fails nor counts it.
func TestRunSkipsMissingPeer(t *testing.T) {
	t.Setenv(peers.NginxEnv, "/nonexistent/nginx")
	bin := buildRlbench(t)
	code, output := rlbenchRun(t, bin, "run", "--out", filepath.Join(t.TempDir(), "out"), "../../scenarios/peers/peer-nginx-nodelay.yaml")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, output)
	}
	for _, want := range []string{"peer-nginx-nodelay: skipped: nginx is not installed", "apt-get install nginx"} {
		if !strings.Contains(output, want) {
			t.Errorf("output lacks %q:\n%s", want, output)
		}
	}
}

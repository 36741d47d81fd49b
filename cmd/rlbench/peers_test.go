//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/peers"
)

// TestRunSkipsMissingPeer runs a peer scenario on a machine without the
// peer: the scenario is reported as skipped, with how to install it; the
// last line, summary.json and junit.xml count the skip; the run passes,
// unless --fail-on-skip makes the skip fail it with the harness's code.
func TestRunSkipsMissingPeer(t *testing.T) {
	t.Setenv(peers.NginxEnv, "/nonexistent/nginx")
	bin := buildRlbench(t)
	out := filepath.Join(t.TempDir(), "out")
	code, output := rlbenchRun(t, bin, "run", "--out", out, "../../scenarios/peers/peer-nginx-nodelay.yaml")
	if code != exitOK {
		t.Fatalf("exit %d, want %d:\n%s", code, exitOK, output)
	}
	for _, want := range []string{"peer-nginx-nodelay: skipped: nginx is not installed", "apt-get install nginx", "Verdict: pass. 1 scenario: 1 skipped. Summary, JUnit and report in"} {
		if !strings.Contains(output, want) {
			t.Errorf("output lacks %q:\n%s", want, output)
		}
	}
	s := readSummaryFile(t, filepath.Join(out, "summary.json"))
	if s.Status != checker.StatusPass || s.Totals != (checker.Totals{Scenarios: 1, Skipped: 1}) || len(s.Skipped) != 1 ||
		s.Skipped[0].Name != "peer-nginx-nodelay" || s.Skipped[0].Status != checker.StatusSkipped || !strings.Contains(s.Skipped[0].Reason, "apt-get install nginx") {
		t.Errorf("summary.json: status %s, totals %+v, skipped %+v; want pass, one skipped with its reason", s.Status, s.Totals, s.Skipped)
	}
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(junit), `skipped="1"`) || !strings.Contains(string(junit), `<skipped message="nginx is not installed`) {
		t.Errorf("junit.xml does not count the skip:\n%s", junit)
	}

	code, output = rlbenchRun(t, bin, "run", "--fail-on-skip", "--out", out, "../../scenarios/peers/peer-nginx-nodelay.yaml")
	if code != exitHarnessError || !strings.Contains(output, "1 scenario skipped, and --fail-on-skip makes a skip fail the run") {
		t.Errorf("--fail-on-skip: exit %d, want %d with the reason:\n%s", code, exitHarnessError, output)
	}
}

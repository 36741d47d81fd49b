// The scenarios of this directory run peer limiters (harness/peers) instead
// of the sample API: `rlbench run scenarios/peers/`.
package peers_test

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/scenarios"
)

func TestPeerScenariosParse(t *testing.T) {
	all, err := scenarios.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 3 {
		t.Fatalf("found %d peer scenarios, want at least 3", len(all))
	}
	for _, sc := range all {
		if sc.Target.Peer == "" {
			t.Errorf("%s: target.peer is not set", sc.Source)
		}
		if !strings.HasPrefix(sc.Name, "peer-") {
			t.Errorf("%s: name %q does not start with peer-", sc.Source, sc.Name)
		}
		if sc.Checks.FalseRejections == nil {
			t.Errorf("%s: no false_rejections bound", sc.Source)
		}
	}
}

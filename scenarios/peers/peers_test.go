// The scenarios of this directory run peer limiters (harness/peers) instead
// of the sample API: `rlbench run scenarios/peers/`.
package peers_test

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/scenarios"
	"github.com/rlbench/rlbench/scenarios/peers"
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

// TestAllEmbedsEveryFile: the embedded scenarios are the directory's.
func TestAllEmbedsEveryFile(t *testing.T) {
	onDisk, err := scenarios.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := peers.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(embedded) != len(onDisk) {
		t.Fatalf("%d embedded scenarios, %d on disk", len(embedded), len(onDisk))
	}
	for i := range onDisk {
		if got, want := embedded[i].Name, onDisk[i].Name; got != want {
			t.Errorf("embedded[%d] = %s, want %s", i, got, want)
		}
		if !strings.HasPrefix(embedded[i].Source, "embedded:peers/") {
			t.Errorf("embedded[%d].Source = %q, want embedded:peers/...", i, embedded[i].Source)
		}
	}
}

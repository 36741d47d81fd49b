// Package peers holds the scenarios that run peer limiters (package
// harness/peers) instead of the sample API, one file each, embedded so that
// `rlbench mutate --repeat-reference` runs them from any directory. They are
// kept apart from the shipped scenarios, which `rlbench list` and `rlbench
// run NAME` serve; `rlbench run scenarios/peers/` runs them from a checkout.
package peers

import (
	"embed"
	"fmt"
	"io/fs"

	"github.com/rlbench/rlbench/scenarios"
)

//go:embed *.yaml
var files embed.FS

// Findings names, per peer scenario whose peer does not keep the policy
// claimed for it, the checks that may fail because it does not: the
// findings README's table reports. A run that fails only these checks shows
// the finding again; a failure of any other check is a false alarm.
//
// peer-express: express-rate-limit documents a fixed window, but its Redis
// store opens each key's window at the key's first hit, so an aligned
// window holds more than the limit (budget), and the rejections,
// Retry-After values and RateLimit fields describe its own window, not
// the claimed one.
var Findings = map[string][]string{
	"peer-express": {"budget", "boundary-burst-ratio", "false-rejections", "retry-after", "ratelimit-fields"},
}

// All returns the peer scenarios in file name order, each parsed from its
// embedded file. A file that fails to parse is an error; the tests make
// sure none does.
func All() ([]*scenarios.Scenario, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("list peer scenarios: %w", err)
	}
	var out []*scenarios.Scenario
	for _, e := range entries {
		data, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, fmt.Errorf("read peer scenario: %w", err)
		}
		sc, err := scenarios.Parse("embedded:peers/"+e.Name(), data)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

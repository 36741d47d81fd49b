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

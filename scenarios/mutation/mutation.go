// Package mutation holds the scenarios of rlbench's mutation suite
// (`rlbench mutate`): one per faulty limiter variant of sampleapi/faulty,
// in the file named after the variant, each aimed at the check that must
// catch that variant while the reference limiter passes it. They are kept
// apart from the shipped scenarios, which `rlbench list` and `rlbench run
// NAME` serve.
package mutation

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rlbench/rlbench/scenarios"
)

//go:embed *.yaml
var files embed.FS

// Scenario returns the scenario aimed at variant, parsed from the embedded
// file VARIANT.yaml. A variant without one gives an error wrapping
// scenarios.ErrNotFound.
func Scenario(variant string) (*scenarios.Scenario, error) {
	file := variant + ".yaml"
	data, err := files.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no mutation scenario for variant %q", scenarios.ErrNotFound, variant)
	}
	if err != nil {
		return nil, fmt.Errorf("read mutation scenario: %w", err)
	}
	return scenarios.Parse("embedded:mutation/"+file, data)
}

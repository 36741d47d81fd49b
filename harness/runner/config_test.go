package runner

import (
	"testing"

	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

// TestInstanceConfigIsAcceptedBySampleAPI: every shipped scenario's
// generated configuration parses strictly and validates in the sample API.
func TestInstanceConfigIsAcceptedBySampleAPI(t *testing.T) {
	infos, err := scenarios.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		t.Run(in.Name, func(t *testing.T) {
			sc, err := scenarios.Lookup(in.Name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Target.Instances == 0 {
				t.Skip("external target: no instance configuration")
			}
			data, err := InstanceConfig(sc)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := sampleapi.ParseConfig(in.Name+"/instance-config.yaml", data)
			if err != nil {
				t.Fatalf("sample API rejects the generated configuration: %v\n%s", err, data)
			}
			cfg.Redis = "redis://127.0.0.1:1/0"
			if err := cfg.Validate(); err != nil {
				t.Fatalf("generated configuration is invalid: %v\n%s", err, data)
			}
			if got, want := len(cfg.ExtraRoutes), len(sc.Target.Routes); got != want {
				t.Fatalf("%d routes in the configuration, want %d", got, want)
			}
		})
	}
}

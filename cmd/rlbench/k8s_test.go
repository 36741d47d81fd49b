package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

const k8sPlainScenario = `name: plain
description: an API in the cluster, no Redis to agree a start through
target:
  clock: {offset: -3s, uncertainty: 10ms}
  external: ["http://orders.shop.svc:8080"]
  routes:
    - {path: /v1/orders, policies: ["gcra:10/1s,burst=10"]}
traffic:
  - {kind: constant, rate: 50/1s, duration: 30s}
`

// TestK8sFlags: each flag's bad value is refused with an error naming it
// (a usage error, exit 2); a scenario that cannot be sharded too.
func TestK8sFlags(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	if err := os.WriteFile(plain, []byte(k8sPlainScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	const example = "../../scenarios/examples/orders-sharded.yaml"
	ok := []string{"--shards", "3", "--image", "rlbench:dev"}
	tests := []struct {
		args  []string
		want  string
		usage bool
	}{
		{nil, "name the scenario to shard", true},
		{[]string{plain, plain, "--shards", "2"}, "a sharded run is one scenario; got 2 arguments", true},
		{[]string{plain, "--image", "rlbench:dev"}, "--shards is required: the number of shards, 1 to 1024 (scenario plain gives no shards.count)", true},
		{[]string{plain, "--image", "rlbench:dev", "--shards", "0"}, "--shards 0: want 1 to 1024", true},
		{[]string{plain, "--image", "rlbench:dev", "--shards", "1025"}, "--shards 1025: want 1 to 1024", true},
		{[]string{plain, "--shards", "3"}, "--image is required: the rlbench image the pods run; build it from the repository's Dockerfile", true},
		{[]string{plain, "--shards", "3", "--image", "rlbench dev"}, `--image "rlbench dev": an image reference holds no space`, true},
		{append([]string{plain, "--run-id", "xyz"}, ok...), `--run-id: run id "xyz": want eight hex digits`, true},
		{append([]string{plain, "--namespace", "Load_Tests"}, ok...), `--namespace "Load_Tests" is not a Kubernetes name`, true},
		{append([]string{plain, "--secret", "My.Secret"}, ok...), `--secret "My.Secret" is not a Kubernetes name`, true},
		{append([]string{plain, "--storage-class", "nfs client"}, ok...), `--storage-class "nfs client" is not a Kubernetes name`, true},
		{append([]string{plain, "--pvc", "shared", "--volume-size", "2Gi"}, ok...), "--pvc names a claim that exists; --storage-class and --volume-size", true},
		{append([]string{plain, "--pvc", "shared", "--storage-class", "nfs"}, ok...), "--pvc names a claim that exists", true},
		{append([]string{plain, "--volume-size", "0"}, ok...), "--volume-size 0: want a positive size", true},
		{append([]string{plain, "--volume-size", "lots"}, ok...), `--volume-size lots: not a quantity`, true},
		{append([]string{plain, "--cpu", "2", "--cpu-limit", "1500m"}, ok...), "--cpu-limit 1500m is below --cpu 2", true},
		{append([]string{plain, "--memory", "0"}, ok...), "--memory 0: want a positive quantity", true},
		{append([]string{plain, "--memory", "500m"}, ok...), "--memory 500m: a fraction of a byte (m is milli in Kubernetes quantities); want at least 64Mi; did you mean 500Mi?", true},
		{append([]string{plain, "--memory", "512"}, ok...), "--memory 512: below the least this takes, 64Mi; did you mean 512Mi?", true},
		{append([]string{plain, "--memory", "0.5"}, ok...), "--memory 0.5: a fraction of a byte", true},
		{append([]string{plain, "--memory-limit", "32Mi"}, ok...), "--memory-limit 32Mi: below the least this takes, 64Mi", true},
		{append([]string{plain, "--volume-size", "1"}, ok...), "--volume-size 1: below the least this takes, 16Mi; did you mean 1Gi?", true},
		{append([]string{plain, "--volume-size", "2m"}, ok...), "--volume-size 2m: a fraction of a byte (m is milli in Kubernetes quantities); want at least 16Mi; did you mean 2Gi?", true},
		{append([]string{plain, "--cpu", "lots"}, ok...), "--cpu lots: not a quantity; want cores, as 500m (half a core) or 2", true},
		{append([]string{plain, "--memory", "lots"}, ok...), "--memory lots: not a quantity; want bytes with a binary suffix, as 512Mi or 1Gi", true},
		{append([]string{plain, "--memory-limit", "-1Gi"}, ok...), "--memory-limit -1Gi: want a positive quantity, or 0 for no limit", true},
		{append([]string{plain, "--start-delay", "0s"}, ok...), "--start-delay 0s: want a delay above 0", true},
		{append([]string{plain, "--timeout", "500ms"}, ok...), "--timeout 500ms: want at least 1s", true},
		{append([]string{plain, "--timeout", "1s"}, ok...), "--timeout 1s: the shards' Job would end before they finish", true},
		{append([]string{plain, "--secret", "orders"}, ok...), "--secret orders: scenario plain takes no variable", true},
		{append([]string{example}, ok...), "--secret is required: scenario orders-sharded takes the variable ORDERS_API_TOKEN, which the manifests never hold", true},
		{append([]string{example, "--secret", "orders", "--start-delay", "5m"}, ok...), "--start-delay: scenario orders-sharded has redis.url", true},
		{append([]string{"quickstart"}, ok...), "embedded:quickstart.yaml: not shardable: target.instances: every shard would start its own sample API instances", false},
		{append([]string{"quickstrat"}, ok...), `did you mean "quickstart"?`, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := (&k8sCommand{stdout: &out}).Run(context.Background(), tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if isUsage(err) != tt.usage {
				t.Errorf("usage error %v, want %v", isUsage(err), tt.usage)
			}
			if out.Len() > 0 {
				t.Errorf("wrote %q on an error", out.String())
			}
		})
	}
}

// TestK8sStartAt: without redis.url the shards start --start-delay after
// now on the limiter's clock (the scenario declares it 3s behind), in
// whole seconds rounded up, and the first lines say so.
func TestK8sStartAt(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	if err := os.WriteFile(plain, []byte(k8sPlainScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2031, 5, 6, 7, 8, 9, 500e6, time.FixedZone("CEST", 2*3600))
	tests := []struct {
		delay []string
		want  string
	}{
		{nil, "2031-05-06T05:10:07Z"},
		{[]string{"--start-delay", "90s"}, "2031-05-06T05:09:37Z"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		cmdArgs := append([]string{plain, "--shards", "2", "--image", "rlbench:dev", "--run-id", "0000abcd"}, tt.delay...)
		if err := (&k8sCommand{stdout: &out, now: func() time.Time { return now }}).Run(context.Background(), cmdArgs); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		docs := strings.Split(s, "\n---\n")
		var shards batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(docs[len(docs)-2]), &shards); err != nil {
			t.Fatal(err)
		}
		args := shards.Spec.Template.Spec.Containers[0].Args
		if i := slices.Index(args, "--start-at"); i < 0 || i+1 == len(args) || args[i+1] != tt.want {
			t.Errorf("%q: shard args %q, want --start-at %s", tt.delay, args, tt.want)
		}
		head, _, _ := strings.Cut(s, "apiVersion:")
		if !strings.Contains(strings.ReplaceAll(head, "\n# ", " "), "no redis.url through which the shards could agree their start (--barrier), so they start at "+tt.want+" on the limiter's clock") {
			t.Errorf("%q: the comment lines do not say when the shards start:\n%s", tt.delay, head)
		}
	}
}

// TestK8sShardsFromScenario: without --shards the scenario's shards.count
// gives the number of shards; --shards overrides it.
func TestK8sShardsFromScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counted.yaml")
	if err := os.WriteFile(path, []byte(k8sPlainScenario+"shards: {count: 3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		flags []string
		want  int32
	}{{nil, 3}, {[]string{"--shards", "5"}, 5}} {
		var out bytes.Buffer
		args := append([]string{path, "--image", "rlbench:dev"}, tt.flags...)
		if err := (&k8sCommand{stdout: &out}).Run(context.Background(), args); err != nil {
			t.Fatal(err)
		}
		docs := strings.Split(out.String(), "\n---\n")
		var shards batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(docs[len(docs)-2]), &shards); err != nil {
			t.Fatal(err)
		}
		if c := shards.Spec.Completions; c == nil || *c != tt.want {
			t.Errorf("%q: completions %v, want %d", tt.flags, c, tt.want)
		}
	}
}

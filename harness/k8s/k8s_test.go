package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios"
)

// decoded is the output of WriteYAML read back into the API's types.
type decoded struct {
	kinds     []string
	configMap *corev1.ConfigMap
	claim     *corev1.PersistentVolumeClaim
	shards    *batchv1.Job
	check     *batchv1.Job
	objects   []metav1.Object
	comments  string
}

// decode splits out into its YAML documents and decodes each strictly
// (a field the API type does not have is an error) into the type its kind
// names.
func decode(t *testing.T, out []byte) *decoded {
	t.Helper()
	d := &decoded{}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "#") {
			d.comments += line + "\n"
		}
	}
	for i, doc := range strings.Split(string(out), "\n---\n") {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		d.kinds = append(d.kinds, tm.Kind)
		var obj any
		switch tm.Kind {
		case "ConfigMap":
			d.configMap = &corev1.ConfigMap{}
			obj = d.configMap
		case "PersistentVolumeClaim":
			d.claim = &corev1.PersistentVolumeClaim{}
			obj = d.claim
		case "Job":
			job := &batchv1.Job{}
			if d.shards == nil {
				d.shards = job
			} else {
				d.check = job
			}
			obj = job
		default:
			t.Fatalf("document %d is a %q", i, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s) does not decode strictly: %v", i, tm.Kind, err)
		}
		d.objects = append(d.objects, obj.(metav1.Object))
	}
	return d
}

// expand replaces each $(NAME) in s by vars[NAME], as the kubelet expands
// a container's arguments from its environment; a reference to a variable
// vars does not hold is an error.
func expand(s string, vars map[string]string) (string, error) {
	var err error
	out := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(s, func(ref string) string {
		v, ok := vars[ref[2:len(ref)-1]]
		if !ok {
			err = fmt.Errorf("%s is not in the container's environment", ref)
		}
		return v
	})
	return out, err
}

// writeFiles writes files into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

const plainScenario = `name: plain_orders
description: an API in the cluster, no Redis to agree a start through
target:
  clock: {offset: 0s, uncertainty: 5ms}
  external: ["http://orders.shop.svc:8080", "http://orders-2.shop.svc:8080"]
  routes:
    - {path: /v1/orders, policies: ["gcra:10/1s,burst=10"]}
traffic:
  - {kind: constant, rate: 50/1s, duration: 30s}
`

const sharedRedisScenario = `name: shared
description: sample API instances in every pod, their budget in one Redis
redis: {provider: external, url: "redis://redis.shop.svc:6379/0"}
target:
  instances: 2
  routes:
    - {path: /api/items, policies: ["gcra:10/1s,burst=10"]}
traffic:
  - {kind: burst, requests: 20}
`

const keysScenario = `name: plans
description: keys from files, one of them a group's, and a binary body
redis: {provider: external, url: "redis://:hunter2@redis.shop.svc:6379/0"}
target:
  external: ["http://orders.shop.svc:8080"]
  routes:
    - {path: /v1/upload, method: PUT, body_file: bodies/blob.bin, policies: ["gcra:10/1s,burst=10"]}
    - {path: /v1/orders, method: POST, body_file: bodies/blob.bin, headers: {X-Region: "${RLBENCH_K8S_REGION}", X-Tenant: "${RLBENCH_K8S_TENANT}-1"}, policies: ["gcra:10/1s,burst=10"]}
identities:
  keys_file: keys.txt
  groups:
    - {name: pro, keys_file: keys/pro.txt, policies: ["gcra:600/1m,burst=100"]}
traffic:
  - {kind: burst, requests: 20}
`

// secretValues are what the tests' Secrets hold: none may appear in the
// manifests.
var secretValues = map[string]string{
	"RLBENCH_K8S_REGION": "region-value-7c1e",
	"RLBENCH_K8S_TENANT": "tenant-value-90ad",
	"ORDERS_API_TOKEN":   "token-value-5b2f",
}

const (
	keysFile    = "# real keys\nsk_live_aaaa1111\nsk_live_bbbb2222\n"
	proKeysFile = "pk_live_cccc3333\npk_live_dddd4444\n"
)

func TestManifests(t *testing.T) {
	for name, v := range secretValues {
		t.Setenv(name, v)
	}
	startAt := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name     string
		arg      string // a file, relative to the test's directory, or a shipped name
		scenario string // written to arg, with files, when set
		files    map[string]string
		cfg      Config
		// want
		barrier      bool
		env          []string          // the variables from the Secret
		secretItems  map[string]string // keys file paths by Secret key
		binaryKeys   []string          // ConfigMap keys of binaryData
		noteContains []string
	}{{
		name:         "example",
		arg:          "../../scenarios/examples/orders-sharded.yaml",
		cfg:          Config{Shards: 4, Secret: "orders-api"},
		barrier:      true,
		env:          []string{"ORDERS_API_TOKEN"},
		noteContains: []string{"--barrier", `--from-literal=ORDERS_API_TOKEN="$ORDERS_API_TOKEN"`, "job/rlbench-orders-sharded-3f9a1c07-check"},
	}, {
		name:         "start at, existing claim, namespace",
		arg:          "plain.yaml",
		scenario:     plainScenario,
		cfg:          Config{Shards: 1, StartAt: startAt, Claim: "shared-results", Namespace: "load"},
		noteContains: []string{"in 1 shard of", "no redis.url", "start at 2031-05-06T07:08:09Z on the limiter's clock (--start-at)", "kubectl -n load wait"},
	}, {
		name:     "sample API instances on a Redis the shards share",
		arg:      "shared.yaml",
		scenario: sharedRedisScenario,
		cfg:      Config{Shards: 3},
		barrier:  true,
	}, {
		name:     "keys files and a binary body",
		arg:      "plans.yaml",
		scenario: keysScenario,
		files: map[string]string{
			"keys.txt": keysFile, "keys/pro.txt": proKeysFile, "bodies/blob.bin": "\xff\xfe binary \x00",
		},
		cfg:          Config{Shards: 16, Secret: "plans-secrets", StorageClass: "nfs-client"},
		barrier:      true,
		env:          []string{"RLBENCH_K8S_REGION", "RLBENCH_K8S_TENANT"},
		secretItems:  map[string]string{"keys.txt": "keys.txt", "keys-pro.txt": "keys/pro.txt"},
		binaryKeys:   []string{"bodies-blob.bin"},
		noteContains: []string{"redis.url holds a password", "--from-file=keys.txt=", "--from-file=keys-pro.txt=", "keys/pro.txt"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arg := tt.arg
			if tt.scenario != "" {
				dir := t.TempDir()
				writeFiles(t, dir, tt.files)
				arg = filepath.Join(dir, tt.arg)
				writeFiles(t, dir, map[string]string{tt.arg: tt.scenario})
			}
			src, err := LoadSource(arg)
			if err != nil {
				t.Fatal(err)
			}
			cfg := tt.cfg
			cfg.Image = "registry.example/rlbench:v1"
			cfg.RunID = "3f9a1c07"
			cfg.VolumeSize = resource.MustParse("3Gi")
			cfg.Timeout = 25 * time.Minute
			cfg.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}
			m, err := New(src, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := m.WriteYAML(&out); err != nil {
				t.Fatal(err)
			}
			d := decode(t, out.Bytes())

			wantKinds := []string{"ConfigMap", "PersistentVolumeClaim", "Job", "Job"}
			if cfg.Claim != "" {
				wantKinds = slices.Delete(wantKinds, 1, 2)
			}
			if !slices.Equal(d.kinds, wantKinds) {
				t.Fatalf("documents %v, want %v", d.kinds, wantKinds)
			}
			notes := strings.ReplaceAll(d.comments, "\n# ", " ")
			for _, want := range tt.noteContains {
				if !strings.Contains(notes, want) {
					t.Errorf("the comment lines lack %q:\n%s", want, d.comments)
				}
			}
			for _, v := range secretValues {
				if strings.Contains(out.String(), v) {
					t.Errorf("the manifests hold the secret value %q", v)
				}
			}
			for _, line := range strings.Split(keysFile+proKeysFile, "\n") {
				if strings.HasPrefix(line, "sk_") || strings.HasPrefix(line, "pk_") {
					if strings.Contains(out.String(), line) {
						t.Errorf("the manifests hold the key %q", line)
					}
				}
			}
			checkLabels(t, d, src.Scenario.Name, cfg)

			// The ConfigMap holds the scenario file as written.
			cm := d.configMap
			if got, want := cm.Data[src.File], string(src.Data); got != want {
				t.Errorf("ConfigMap %s = %q, want the scenario file", src.File, got)
			}
			if got := slices.Sorted(maps.Keys(cm.BinaryData)); !slices.Equal(got, tt.binaryKeys) {
				t.Errorf("binaryData keys %v, want %v", got, tt.binaryKeys)
			}

			claimName := cfg.Claim
			if d.claim != nil {
				claimName = d.claim.Name
				if got := d.claim.Spec.AccessModes; !slices.Equal(got, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
					t.Errorf("claim access modes %v, want ReadWriteMany", got)
				}
				if got := d.claim.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(cfg.VolumeSize) != 0 {
					t.Errorf("claim size %s, want %s", got.String(), cfg.VolumeSize.String())
				}
				if got := d.claim.Spec.StorageClassName; (got == nil) != (cfg.StorageClass == "") || got != nil && *got != cfg.StorageClass {
					t.Errorf("storage class %v, want %q", got, cfg.StorageClass)
				}
			}

			checkShards(t, d, src, cfg, tt.barrier, tt.env, claimName)
			checkCheck(t, d, cfg, claimName)
			// The pod finds every file the scenario names where it names
			// them: the scenario parses from the volume as it lies there.
			dir := materialize(t, d, src, tt.secretItems)
			if _, err := scenarios.ParseUnexpanded(filepath.Join(dir, src.File), src.Data); err != nil {
				t.Errorf("the scenario does not parse from its volume: %v", err)
			}
		})
	}
}

// checkLabels: every object and pod template carries the run's labels,
// each a valid label value, and every name is a valid object name.
func checkLabels(t *testing.T, d *decoded, scenario string, cfg Config) {
	t.Helper()
	instance := Name(scenario, cfg.RunID)
	want := map[string]string{
		"app.kubernetes.io/name": "rlbench", "app.kubernetes.io/instance": instance,
		LabelScenario: scenario, LabelRunID: string(cfg.RunID),
	}
	labelled := map[string]map[string]string{}
	for _, obj := range d.objects {
		labelled[obj.GetName()] = obj.GetLabels()
		if errs := validation.IsDNS1123Subdomain(obj.GetName()); len(errs) > 0 || len(obj.GetName()) > validation.DNS1123LabelMaxLength {
			t.Errorf("name %q: %v", obj.GetName(), errs)
		}
		if got := obj.GetNamespace(); got != cfg.Namespace {
			t.Errorf("%s: namespace %q, want %q", obj.GetName(), got, cfg.Namespace)
		}
	}
	labelled["shard pods"] = d.shards.Spec.Template.Labels
	labelled["check pod"] = d.check.Spec.Template.Labels
	for what, labels := range labelled {
		for k, v := range want {
			if labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", what, k, labels[k], v)
			}
		}
		if labels["app.kubernetes.io/component"] == "" {
			t.Errorf("%s: no component label", what)
		}
		for k, v := range labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s: label %s=%q: %v", what, k, v, errs)
			}
		}
	}
}

// checkShards: the Indexed Job's counts, and pod i's command line, volumes
// and environment.
func checkShards(t *testing.T, d *decoded, src *Source, cfg Config, barrier bool, env []string, claim string) {
	t.Helper()
	job := d.shards
	spec := job.Spec
	n := int32(cfg.Shards)
	switch {
	case spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion:
		t.Errorf("completionMode %s, want Indexed", show(spec.CompletionMode))
	case spec.Completions == nil || *spec.Completions != n, spec.Parallelism == nil || *spec.Parallelism != n:
		t.Errorf("completions %s, parallelism %s, want %d", show(spec.Completions), show(spec.Parallelism), n)
	case spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 0:
		t.Errorf("backoffLimitPerIndex %s, want 0: no shard runs twice", show(spec.BackoffLimitPerIndex))
	case spec.BackoffLimit == nil || *spec.BackoffLimit > n:
		t.Errorf("backoffLimit %s, want at most %d", show(spec.BackoffLimit), n)
	case spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds != int64(cfg.Timeout/time.Second):
		t.Errorf("activeDeadlineSeconds %s, want %d", show(spec.ActiveDeadlineSeconds), int64(cfg.Timeout/time.Second))
	case spec.PodFailurePolicy == nil || len(spec.PodFailurePolicy.Rules) == 0:
		t.Errorf("no podFailurePolicy")
	case spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("restartPolicy %q, want Never", spec.Template.Spec.RestartPolicy)
	}
	pod := spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != cfg.Image || len(c.Command) != 0 {
		t.Errorf("image %q command %q, want %q and the image's entrypoint", c.Image, c.Command, cfg.Image)
	}
	if got := c.Resources.Requests[corev1.ResourceCPU]; got.String() != "1500m" {
		t.Errorf("cpu request %s, want 1500m", got.String())
	}

	// The environment: the completion index and each variable, from the
	// Secret under its own name.
	var secretEnv []string
	indexFromAnnotation := false
	for _, e := range c.Env {
		switch {
		case e.Value != "":
			t.Errorf("env %s has a value in the manifest", e.Name)
		case e.Name == "JOB_COMPLETION_INDEX":
			indexFromAnnotation = e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			if ref := e.ValueFrom.SecretKeyRef; ref.Name != cfg.Secret || ref.Key != e.Name {
				t.Errorf("env %s from Secret %s key %s, want %s key %s", e.Name, ref.Name, ref.Key, cfg.Secret, e.Name)
			}
			secretEnv = append(secretEnv, e.Name)
		}
	}
	if !indexFromAnnotation {
		t.Errorf("JOB_COMPLETION_INDEX is not the pod's completion index")
	}
	if !slices.Equal(secretEnv, env) {
		t.Errorf("env from the Secret %v, want %v", secretEnv, env)
	}

	// Pod i's command line, as the kubelet expands it.
	for i := range cfg.Shards {
		args := make([]string, len(c.Args))
		for j, a := range c.Args {
			var err error
			if args[j], err = expand(a, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}); err != nil {
				t.Fatalf("argument %q: %v", a, err)
			}
		}
		if args[0] != "run" || args[1] != "--shard" {
			t.Fatalf("pod %d runs %q, want rlbench run --shard", i, args)
		}
		if s, err := history.ParseShard(args[2]); err != nil || s != (history.Shard{Index: i, Count: cfg.Shards}) {
			t.Errorf("pod %d: --shard %s (%v), want %d/%d", i, args[2], err, i, cfg.Shards)
		}
		start := []string{"--start-at", cfg.StartAt.UTC().Format(time.RFC3339)}
		if barrier {
			start = []string{"--barrier"}
		}
		want := slices.Concat([]string{"run", "--shard", args[2], "--run-id", string(cfg.RunID)}, start,
			[]string{"--out", fmt.Sprintf("/results/shard-%d", i), "/scenario/" + src.File})
		if !slices.Equal(args, want) {
			t.Errorf("pod %d args\n%q, want\n%q", i, args, want)
		}
	}

	// Volumes: the scenario read-only at /scenario, the claim at /results.
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if vm := mounts["/scenario"]; !vm.ReadOnly || volumes[vm.Name].Projected == nil {
		t.Errorf("/scenario: mount %+v of volume %+v, want a read-only projected volume", vm, volumes[vm.Name])
	} else if src := volumes[vm.Name].Projected.Sources[0].ConfigMap; src == nil || src.Name != d.configMap.Name {
		t.Errorf("/scenario's first source %+v, want ConfigMap %s", src, d.configMap.Name)
	}
	if vm := mounts["/results"]; vm.ReadOnly || vm.SubPath != d.configMap.Name ||
		volumes[vm.Name].PersistentVolumeClaim == nil || volumes[vm.Name].PersistentVolumeClaim.ClaimName != claim {
		t.Errorf("/results: mount %+v of volume %+v, want the run's directory %s of claim %s read-write", vm, volumes[vm.Name], d.configMap.Name, claim)
	}
}

// show prints what p points to, or nil.
func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// checkCheck: the check Job waits for the shards with the volume mounted
// and runs rlbench check on it.
func checkCheck(t *testing.T, d *decoded, cfg Config, claim string) {
	t.Helper()
	spec := d.check.Spec
	pod := spec.Template.Spec
	if spec.CompletionMode != nil && *spec.CompletionMode != batchv1.NonIndexedCompletion || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("check Job: completionMode %v restartPolicy %q, want NonIndexed and Never", spec.CompletionMode, pod.RestartPolicy)
	}
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("check pod: %d init containers and %d containers, want 1 and 1", len(pod.InitContainers), len(pod.Containers))
	}
	wait, check := pod.InitContainers[0], pod.Containers[0]
	env := map[string]string{}
	for _, e := range wait.Env {
		env[e.Name] = e.Value
	}
	if !slices.Equal(wait.Command, []string{"/bin/sh", "-c", waitScript}) || env["SHARDS"] != strconv.Itoa(cfg.Shards) ||
		env["RESULTS"] != "/results" || env["TIMEOUT_SECONDS"] != strconv.Itoa(int(cfg.Timeout/time.Second)) {
		t.Errorf("wait container %q env %v, want the wait script for %d shards in /results within %v", wait.Command, env, cfg.Shards, cfg.Timeout)
	}
	if want := []string{"check", "--out", "/results/report", "/results"}; check.Image != cfg.Image || !slices.Equal(check.Args, want) {
		t.Errorf("check container %s %q, want %s %q", check.Image, check.Args, cfg.Image, want)
	}
	for _, c := range []corev1.Container{wait, check} {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/results" || c.VolumeMounts[0].SubPath != d.configMap.Name {
			t.Errorf("%s mounts %+v, want the run's directory %s at /results", c.Name, c.VolumeMounts, d.configMap.Name)
		}
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].PersistentVolumeClaim == nil || pod.Volumes[0].PersistentVolumeClaim.ClaimName != claim {
		t.Errorf("check volumes %+v, want claim %s", pod.Volumes, claim)
	}
}

// materialize lays the shards' /scenario volume out in a directory as the
// kubelet would: the ConfigMap's items, and the Secret's, whose keys files
// the user created from the files beside the scenario (secretItems, each
// key's path there). It returns the directory.
func materialize(t *testing.T, d *decoded, src *Source, secretItems map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var vol *corev1.ProjectedVolumeSource
	for _, v := range d.shards.Spec.Template.Spec.Volumes {
		if v.Projected != nil {
			vol = v.Projected
		}
	}
	gotSecret := map[string]string{}
	for _, s := range vol.Sources {
		switch {
		case s.ConfigMap != nil:
			if len(s.ConfigMap.Items) != len(d.configMap.Data)+len(d.configMap.BinaryData) {
				t.Errorf("%d items of %d ConfigMap keys", len(s.ConfigMap.Items), len(d.configMap.Data)+len(d.configMap.BinaryData))
			}
			for _, it := range s.ConfigMap.Items {
				data, ok := d.configMap.Data[it.Key]
				if !ok {
					b, ok := d.configMap.BinaryData[it.Key]
					if !ok {
						t.Fatalf("item %s: no such key in the ConfigMap", it.Key)
					}
					data = string(b)
				}
				writeFiles(t, dir, map[string]string{it.Path: data})
			}
		case s.Secret != nil:
			for _, it := range s.Secret.Items {
				gotSecret[it.Key] = it.Path
				data, err := os.ReadFile(filepath.Join(src.Dir, secretItems[it.Key]))
				if err != nil {
					t.Fatalf("Secret key %s: %v", it.Key, err)
				}
				writeFiles(t, dir, map[string]string{it.Path: string(data)})
			}
		}
	}
	if len(gotSecret) > 0 || len(secretItems) > 0 {
		if fmt.Sprint(gotSecret) != fmt.Sprint(secretItems) {
			t.Errorf("Secret items %v, want %v", gotSecret, secretItems)
		}
	}
	return dir
}

// TestManifestsRefuse: what cannot run as shards in pods is refused with
// the reason and the fix.
func TestManifestsRefuse(t *testing.T) {
	external := func(extra string) string {
		return "name: x\ndescription: d\ntarget:\n  external: [\"http://api.shop.svc:8080\"]\n" +
			"  routes:\n    - {path: /a, policies: [\"gcra:10/1s,burst=10\"]" + extra + "}\ntraffic:\n  - {kind: burst, requests: 5}\n"
	}
	withClock := func(s string) string {
		return strings.Replace(s, "target:\n", "target:\n  clock: {offset: 0s, uncertainty: 5ms}\n", 1)
	}
	withRedis := func(s string) string {
		return strings.Replace(s, "target:", "redis: {provider: external, url: \"redis://redis.shop.svc:6379/0\"}\ntarget:", 1)
	}
	startAt := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		arg      string // a shipped name, when scenario is empty
		scenario string
		files    map[string]string
		cfg      Config
		want     string
		is       error
	}{
		{name: "sample API instances", arg: "quickstart", want: "not shardable: target.instances: every shard would start its own sample API instances on its own Redis"},
		{name: "drill", arg: "drill-redis-kill-open", want: "not shardable: faults: a drill's faults act on one Redis or instance"},
		{name: "external faults", scenario: strings.NewReplacer("{kind: burst, requests: 5}", "{kind: constant, rate: 10/1s, duration: 5s}",
			"target:\n", "target:\n  failure_mode: closed\n  store_timeout: 50ms\n").Replace(withRedis(external(""))) + "faults:\n  - {kind: command, inject: \"true\", effect: none, at: 1s, duration: 1s}\n",
			want: "not shardable: faults"},
		{name: "proxy", scenario: strings.Replace(withRedis(external("")), "provider: external,", "provider: external, proxy: \"127.0.0.1:16379\",", 1),
			want: "not shardable: redis.proxy: 127.0.0.1:16379 is a fault proxy"},
		{name: "own redis", scenario: strings.Replace(withClock(external("")), "target:", "redis: {provider: embedded}\ntarget:", 1), cfg: Config{StartAt: startAt},
			want: "not shardable: redis.provider: embedded starts a Redis in every shard's pod"},
		{name: "loopback target", scenario: strings.Replace(withClock(external("")), "api.shop.svc", "127.0.0.1", 1), cfg: Config{StartAt: startAt},
			want: "target.external[0]: http://127.0.0.1:8080 is a loopback address"},
		{name: "loopback redis", scenario: strings.Replace(withRedis(external("")), "redis.shop.svc", "localhost", 1),
			want: "redis.url: redis://localhost:6379/0 is a loopback address"},
		{name: "body outside", scenario: withClock(external(", body_file: ../order.json")), files: map[string]string{"../order.json": "{}"}, cfg: Config{StartAt: startAt},
			want: "target.routes[0].body_file: ../order.json lies outside the scenario file's directory"},
		{name: "body absolute", scenario: withClock(external(", body_file: ABS")), files: map[string]string{"order.json": "{}"}, cfg: Config{StartAt: startAt},
			want: "is an absolute path, which a pod does not have"},
		{name: "body too large", scenario: withClock(external(", body_file: big.bin")), files: map[string]string{"big.bin": strings.Repeat("x", scenarios.MaxBodyBytes)},
			cfg: Config{StartAt: startAt}, want: "above the 1048576 a ConfigMap may"},
		{name: "secret needed", scenario: withClock(external(", headers: {Authorization: \"Bearer ${TOKEN}\"}")), cfg: Config{StartAt: startAt},
			want: "takes the variable TOKEN, which the manifests never hold", is: ErrNeedsSecret},
		{name: "secret unused", scenario: withClock(external("")), cfg: Config{StartAt: startAt, Secret: "s"}, want: "takes no variable", is: ErrSecretUnused},
		{name: "start time with redis", scenario: withRedis(external("")), cfg: Config{StartAt: startAt}, want: "agree their start through its redis.url"},
		{name: "no start time", scenario: withClock(external("")), want: "has no redis.url through which the shards could agree their start"},
		{name: "no clock", scenario: external(""), cfg: Config{StartAt: startAt},
			want: "not shardable: redis.url: the offset to the limiter's clock is unknown before the traffic"},
		{name: "too many shards", scenario: withRedis(external("")), cfg: Config{Shards: history.MaxShards + 1}, want: "1025 shards: want 1 to 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arg := tt.arg
			if tt.scenario != "" {
				dir := filepath.Join(t.TempDir(), "scenarios")
				writeFiles(t, dir, tt.files)
				arg = filepath.Join(dir, "x.yaml")
				writeFiles(t, dir, map[string]string{"x.yaml": strings.Replace(tt.scenario, "ABS", filepath.Join(dir, "order.json"), 1)})
			}
			src, err := LoadSource(arg)
			if err != nil {
				t.Fatal(err)
			}
			cfg := tt.cfg
			if cfg.Shards == 0 {
				cfg.Shards = 2
			}
			cfg.Image, cfg.RunID, cfg.Timeout, cfg.VolumeSize = "rlbench:dev", "0000abcd", time.Hour, resource.MustParse("1Gi")
			_, err = New(src, cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(tt.want, "not shardable") && !errors.Is(err, scenarios.ErrNotShardable) {
				t.Errorf("New error = %v, want one wrapping scenarios.ErrNotShardable", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("New error = %v, want one wrapping %v", err, tt.is)
			}
		})
	}
}

// TestLoadSource: a file, a shipped name, and what is neither.
func TestLoadSource(t *testing.T) {
	src, err := LoadSource("overhead")
	if err != nil {
		t.Fatal(err)
	}
	if src.File != "overhead.yaml" || src.Dir != "" || src.Scenario.Source != "embedded:overhead.yaml" || !bytes.Contains(src.Data, []byte("name: overhead")) {
		t.Errorf("shipped overhead: file %q dir %q source %q", src.File, src.Dir, src.Scenario.Source)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"my file.yml": plainScenario})
	src, err = LoadSource(filepath.Join(dir, "my file.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if src.File != "plain_orders.yaml" || src.Dir != dir || string(src.Data) != plainScenario {
		t.Errorf("file: name %q dir %q, want plain_orders.yaml in %s with the file's bytes", src.File, src.Dir, dir)
	}
	for arg, want := range map[string]string{
		dir:                        "is a directory; a sharded run is one scenario",
		filepath.Join(dir, "none"): "scenario not found: no file",
		"quickstrat":               `did you mean "quickstart"?`,
	} {
		if _, err := LoadSource(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadSource(%q) error = %v, want one containing %q", arg, err, want)
		}
	}
}

// TestName: object names fit a label value (63 characters), whatever the
// scenario's name.
func TestName(t *testing.T) {
	tests := []struct{ scenario, want string }{
		{"quickstart", "rlbench-quickstart-3f9a1c07"},
		{"plain_orders", "rlbench-plain-orders-3f9a1c07"},
		{strings.Repeat("a", 29) + "_b", "rlbench-" + strings.Repeat("a", 29) + "-3f9a1c07"},
		{strings.Repeat("x", 100), "rlbench-" + strings.Repeat("x", 30) + "-3f9a1c07"},
	}
	for _, tt := range tests {
		got := Name(tt.scenario, "3f9a1c07")
		if got != tt.want {
			t.Errorf("Name(%q) = %q, want %q", tt.scenario, got, tt.want)
		}
		if errs := validation.IsDNS1123Label(got + "-results"); len(errs) > 0 {
			t.Errorf("%s-results: %v", got, errs)
		}
	}
}

// TestConfigMapKey: paths become keys a ConfigMap takes, each once.
func TestConfigMapKey(t *testing.T) {
	taken := map[string]bool{"s.yaml": true}
	for _, tt := range []struct{ path, want string }{
		{"order.json", "order.json"},
		{"bodies/order.json", "bodies-order.json"},
		{"bodies-order.json", "bodies-order.json-2"},
		{"s.yaml", "s.yaml-2"},
		{"a b/ü.txt", "a-b--.txt"},
		{"..x/y", "file-x-y"},
	} {
		if got := uniqueKey(configMapKey(tt.path), taken); got != tt.want {
			t.Errorf("key of %q = %q, want %q", tt.path, got, tt.want)
		}
		if errs := validation.IsConfigMapKey(tt.want); len(errs) > 0 {
			t.Errorf("key %q: %v", tt.want, errs)
		}
	}
}

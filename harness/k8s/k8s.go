// Package k8s writes the Kubernetes manifests of a sharded run, as the k6
// operator runs k6: rlbench splits the run, synchronises its start,
// records each shard and merges the records; Kubernetes places the
// shards. The manifests are a ConfigMap holding the scenario file (and
// the body files it names), a ReadWriteMany PersistentVolumeClaim for the
// results (unless the user names one), an Indexed Job whose pod i runs
// `rlbench run --shard i/N` into shard-i of the run's own directory on the
// volume, and a Job that waits for every shard's run.json and checks them
// as one run with `rlbench check`, leaving the report beside them.
//
// Secrets never enter the manifests: the variables a scenario's headers
// take (${NAME}) and its keys files come from a Secret the user creates.
//
// The objects are the Kubernetes API's own types (k8s.io/api), written as
// YAML by sigs.k8s.io/yaml, the way kubectl reads them.
package k8s

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios"
)

// Where the pods find the scenario and keep the results.
const (
	// ScenarioDir is where the scenario file and the files it names are
	// mounted, read-only.
	ScenarioDir = "/scenario"
	// ResultsDir is where the run's directory of the shared volume is
	// mounted: shard i writes ResultsDir/shard-i, the check writes
	// ReportDir.
	ResultsDir = "/results"
	// ReportDir holds the merged run's report.html, summary.json and
	// junit.xml.
	ReportDir = ResultsDir + "/report"
)

// RunAsUser is the user and group the pods run as: rlbench, uid 10001, the
// user the repository's Dockerfile makes. The volume is given this group
// (fsGroup) so that the shards can write it.
const RunAsUser = 10001

// Defaults of Config's fields, which `rlbench k8s` starts its flags at.
const (
	DefaultStartDelay    = 2 * time.Minute
	DefaultVolumeSize    = "1Gi"
	DefaultCPURequest    = "1"
	DefaultCPULimit      = "2"
	DefaultMemoryRequest = "512Mi"
	DefaultMemoryLimit   = "1Gi"
	// DefaultTimeoutSlack is what DefaultTimeout allows beyond the start
	// delay and the traffic: pulling the image, scheduling the pods,
	// setting up the run and writing its histories.
	DefaultTimeoutSlack = 10 * time.Minute
)

// waitPoll is how often the check pod looks for the shards' run.json.
const waitPoll = 5 * time.Second

// Label keys every object and pod carries, beside the recommended
// app.kubernetes.io ones: the scenario's name and the run's id.
const (
	LabelScenario = "rlbench/scenario"
	LabelRunID    = "rlbench/run-id"
)

// maxNameScenario is how much of the scenario's name object names keep,
// so that the longest, the claim's "rlbench-NAME-RUNID-results", stays
// within the 63 characters of a label value (a Job's name is one, in its
// pods' job-name label).
const maxNameScenario = 30

// Config says what manifests New writes. Its fields have no usable zero
// value except where noted; `rlbench k8s` starts them at the Default*
// constants.
type Config struct {
	// Shards is the number of shards, 1 to history.MaxShards: the Job's
	// completions and parallelism.
	Shards int
	// Image is the rlbench image the pods run (the repository's
	// Dockerfile builds it), whose entrypoint is rlbench.
	Image string
	// RunID names the run: every shard sends as this run (its identities
	// carry it) and it names the objects. Required.
	RunID scenarios.RunID
	// Namespace is the objects' namespace; empty leaves it to kubectl's
	// context.
	Namespace string
	// Secret names the Secret holding the variables the scenario's
	// headers take (each under its own name) and its keys files (under
	// the keys the notes name); required when the scenario takes any,
	// empty otherwise.
	Secret string
	// Claim names an existing ReadWriteMany PersistentVolumeClaim for the
	// results; empty makes the manifests create one of VolumeSize, in
	// StorageClass (empty: the cluster's default class).
	Claim        string
	StorageClass string
	VolumeSize   resource.Quantity
	// Resources are the requests and limits of every shard's container
	// and of the check's.
	Resources corev1.ResourceRequirements
	// StartAt, for a scenario without redis.url, is when every shard
	// starts its traffic (`rlbench run --start-at`), on the limiter's
	// clock (this host's plus the offset target.clock declares); it must
	// be zero for one with redis.url, whose shards agree their start
	// through that Redis (`rlbench run --barrier`).
	StartAt time.Time
	// Timeout bounds the shards: their Job ends (activeDeadlineSeconds)
	// and the check stops waiting for them this long after it starts.
	// DefaultTimeout gives one.
	Timeout time.Duration
}

// DefaultTimeout is Config.Timeout for sc when its shards start after
// startDelay: the delay, the longest its traffic can take and
// DefaultTimeoutSlack.
func DefaultTimeout(sc *scenarios.Scenario, startDelay time.Duration) time.Duration {
	d := startDelay + DefaultTimeoutSlack
	for _, p := range sc.Phases {
		d += p.Length()
	}
	return d
}

// Manifests are the objects of one sharded run, to apply together. Write
// them with WriteYAML.
type Manifests struct {
	// ConfigMap holds the scenario file and the body files it names.
	ConfigMap *corev1.ConfigMap
	// Claim is the results' volume claim; nil when Config.Claim names one.
	Claim *corev1.PersistentVolumeClaim
	// Shards is the Indexed Job of the shards; Check the Job that checks
	// them as one run.
	Shards, Check *batchv1.Job
	// Notes are what the user must do or know, each a line: how the shards
	// start, the Secret to create, the command that waits for the report.
	Notes []string
}

// Name is the stem of the objects' names for the run id of scenario
// name: "rlbench-NAME-RUNID", NAME cut to 30 characters, '_' as '-'.
func Name(scenario string, id scenarios.RunID) string {
	n := strings.ReplaceAll(scenario, "_", "-")
	n = strings.TrimRight(n[:min(len(n), maxNameScenario)], "-")
	return "rlbench-" + n + "-" + string(id)
}

// New returns the manifests that run src's scenario in cfg.Shards shards.
// Errors: a scenario that cannot be sharded (wrapping
// scenarios.ErrNotShardable: what Shardable refuses, or a Redis or fault
// proxy every pod would start of its own), an address a pod cannot reach
// (loopback), a file a pod cannot find beside the scenario,
// a ConfigMap over its 1 MiB, a Secret missing or not needed, a start
// that does not fit the scenario, and a Config outside its bounds.
func New(src *Source, cfg Config) (*Manifests, error) {
	sc := src.Scenario
	if err := shardable(sc); err != nil {
		return nil, err
	}
	if err := reachable(sc); err != nil {
		return nil, err
	}
	if err := cfg.check(sc); err != nil {
		return nil, err
	}
	mounts, err := src.mounts()
	if err != nil {
		return nil, err
	}
	env := envNames(sc)
	var keyFiles []mount
	for _, m := range mounts {
		if m.Secret {
			keyFiles = append(keyFiles, m)
		}
	}
	switch {
	case cfg.Secret == "" && (len(env) > 0 || len(keyFiles) > 0):
		return nil, fmt.Errorf("scenario %s takes %s, which the manifests never hold: %w", sc.Name, secretContents(env, keyFiles), ErrNeedsSecret)
	case cfg.Secret != "" && len(env) == 0 && len(keyFiles) == 0:
		return nil, fmt.Errorf("scenario %s takes no variable (${NAME} in a header) and no keys file: %w", sc.Name, ErrSecretUnused)
	}
	for _, m := range keyFiles {
		if slices.Contains(env, m.Key) {
			return nil, fmt.Errorf("%s: %s: %s would take the Secret's key %s, which the variable %s takes; rename the file", sc.Source, m.Field, m.Name, m.Key, m.Key)
		}
	}

	b := &builder{src: src, cfg: cfg, name: Name(sc.Name, cfg.RunID), mounts: mounts, env: env}
	m := &Manifests{ConfigMap: b.configMap()}
	if size := configMapSize(m.ConfigMap); size > corev1.MaxSecretSize {
		return nil, fmt.Errorf("scenario %s: the scenario file and its body files hold %d bytes, above the %d a ConfigMap may; make the bodies smaller",
			sc.Name, size, corev1.MaxSecretSize)
	}
	if cfg.Claim == "" {
		m.Claim = b.claim()
	}
	m.Shards = b.shardsJob()
	m.Check = b.checkJob()
	m.Notes = b.notes(keyFiles)
	return m, nil
}

// ErrNeedsSecret is wrapped by New's error for a scenario that takes
// variables or keys files when Config.Secret names no Secret;
// ErrSecretUnused for a Secret named when it takes none.
var (
	ErrNeedsSecret  = errors.New("name a Secret that holds them")
	ErrSecretUnused = errors.New("a Secret would go unused")
)

// check reports a Config outside its bounds for sc.
func (cfg Config) check(sc *scenarios.Scenario) error {
	switch {
	case cfg.Shards < 1 || cfg.Shards > history.MaxShards:
		return fmt.Errorf("%d shards: want 1 to %d", cfg.Shards, history.MaxShards)
	case cfg.Image == "":
		return fmt.Errorf("no image: name the rlbench image the pods run")
	case cfg.RunID == "":
		return fmt.Errorf("no run id: every shard must send as the same run")
	case cfg.Timeout < time.Second:
		return fmt.Errorf("timeout %v: want at least a second", cfg.Timeout)
	case cfg.Claim == "" && cfg.VolumeSize.Sign() <= 0:
		return fmt.Errorf("volume size %s: want a positive size, as 1Gi", cfg.VolumeSize.String())
	case sc.Redis.URL != "" && !cfg.StartAt.IsZero():
		return fmt.Errorf("a start time is given, but the shards of scenario %s agree their start through its redis.url", sc.Name)
	case sc.Redis.URL == "" && cfg.StartAt.IsZero():
		return fmt.Errorf("scenario %s has no redis.url through which the shards could agree their start: give them a start time", sc.Name)
	}
	return nil
}

// secretContents says what a run's Secret must hold.
func secretContents(env []string, keyFiles []mount) string {
	var parts []string
	switch len(env) {
	case 0:
	case 1:
		parts = append(parts, "the variable "+env[0])
	default:
		parts = append(parts, "the variables "+strings.Join(env, ", "))
	}
	for _, m := range keyFiles {
		parts = append(parts, "the keys file "+m.Name+" ("+m.Field+")")
	}
	return strings.Join(parts, " and ")
}

// configMapSize is the size the API server holds a ConfigMap's data to.
func configMapSize(cm *corev1.ConfigMap) int {
	n := 0
	for k, v := range cm.Data {
		n += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		n += len(k) + len(v)
	}
	return n
}

// builder builds one run's objects.
type builder struct {
	src    *Source
	cfg    Config
	name   string
	mounts []mount
	env    []string
}

// Names of the objects, containers and volumes.
func (b *builder) shardsName() string { return b.name + "-shards" }
func (b *builder) checkName() string  { return b.name + "-check" }
func (b *builder) claimName() string {
	if b.cfg.Claim != "" {
		return b.cfg.Claim
	}
	return b.name + "-results"
}

const (
	containerShard = "shard"
	containerWait  = "wait-for-shards"
	containerCheck = "check"
	volumeScenario = "scenario"
	volumeResults  = "results"
)

// Component label values.
const (
	componentScenario = "scenario"
	componentResults  = "results"
	componentShard    = "shard"
	componentCheck    = "check"
)

// labels returns the labels of an object or pod of component.
func (b *builder) labels(component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "rlbench",
		"app.kubernetes.io/instance":  b.name,
		"app.kubernetes.io/component": component,
		LabelScenario:                 b.src.Scenario.Name,
		LabelRunID:                    string(b.cfg.RunID),
	}
}

func (b *builder) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.cfg.Namespace, Labels: b.labels(component)}
}

func (b *builder) configMap() *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: b.meta(b.name, componentScenario),
		// The run's files do not change under it; an immutable ConfigMap
		// is not watched by the kubelets either.
		Immutable: new(true),
		Data:      map[string]string{b.src.File: string(b.src.Data)},
	}
	for _, m := range b.mounts {
		if m.Secret {
			continue
		}
		if utf8.Valid(m.Data) { // data takes UTF-8 only
			cm.Data[m.Key] = string(m.Data)
		} else {
			if cm.BinaryData == nil {
				cm.BinaryData = map[string][]byte{}
			}
			cm.BinaryData[m.Key] = m.Data
		}
	}
	return cm
}

func (b *builder) claim() *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: b.meta(b.claimName(), componentResults),
		Spec: corev1.PersistentVolumeClaimSpec{
			// Every shard's pod, on whatever node, writes it.
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: b.cfg.VolumeSize},
			},
		},
	}
	if b.cfg.StorageClass != "" {
		pvc.Spec.StorageClassName = new(b.cfg.StorageClass)
	}
	return pvc
}

// shardArgs are the arguments of shard i's `rlbench` for a run of shards
// of file, with i written as "$(JOB_COMPLETION_INDEX)", which the kubelet
// replaces by the pod's completion index: barrier selects --barrier,
// else the shards start at startAt.
func shardArgs(file string, shards int, id scenarios.RunID, barrier bool, startAt time.Time) []string {
	args := []string{"run", "--shard", "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(shards), "--run-id", string(id)}
	if barrier {
		args = append(args, "--barrier")
	} else {
		args = append(args, "--start-at", startAt.UTC().Format(time.RFC3339))
	}
	return append(args, "--out", ResultsDir+"/shard-$(JOB_COMPLETION_INDEX)", ScenarioDir+"/"+file)
}

// checkArgs are the arguments of the check's `rlbench`.
func checkArgs() []string { return []string{"check", "--out", ReportDir, ResultsDir} }

func (b *builder) shardsJob() *batchv1.Job {
	n := int32(b.cfg.Shards)
	env := []corev1.EnvVar{{
		// The Job controller sets it too; declared here, it is plainly
		// what $(JOB_COMPLETION_INDEX) in the arguments stands for.
		Name: "JOB_COMPLETION_INDEX",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']",
		}},
	}}
	for _, name := range b.env {
		env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: b.cfg.Secret}, Key: name},
		}})
	}
	pod := b.podSpec()
	pod.Containers = []corev1.Container{{
		Name:            containerShard,
		Image:           b.cfg.Image,
		Args:            shardArgs(b.src.File, b.cfg.Shards, b.cfg.RunID, b.src.Scenario.Redis.URL != "", b.cfg.StartAt),
		Env:             env,
		Resources:       b.cfg.Resources,
		VolumeMounts:    []corev1.VolumeMount{b.scenarioMount(), b.resultsMount()},
		SecurityContext: containerSecurity(),
	}}
	pod.Volumes = []corev1.Volume{b.scenarioVolume(), b.resultsVolume()}
	// Spread the shards over the nodes where the cluster can: load from
	// one host is what sharding sets out to exceed.
	pod.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelHostname,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: b.labels(componentShard)},
	}}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta(b.shardsName(), componentShard),
		Spec: batchv1.JobSpec{
			CompletionMode: new(batchv1.IndexedCompletion),
			Completions:    new(n),
			Parallelism:    new(n),
			// No shard runs twice: a shard run again would send its share
			// of the traffic after its peers. Counted per index, a failed
			// shard fails its index alone and its peers finish, so that
			// their histories are whole; the Job fails at the end.
			BackoffLimitPerIndex: new(int32(0)),
			BackoffLimit:         new(n),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				// A shard evicted or preempted fails its index alone (and
				// is not taken for the invalid input below by its exit
				// code on SIGTERM).
				Action:          batchv1.PodFailurePolicyActionFailIndex,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}, {
				// Exit 2 is invalid input: the scenario, its variables or
				// the flags, which every shard shares. End them all now.
				Action:      batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: new(containerShard), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{2}},
			}}},
			ActiveDeadlineSeconds: new(seconds(b.cfg.Timeout)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(componentShard)},
				Spec:       pod,
			},
		},
	}
}

func (b *builder) checkJob() *batchv1.Job {
	pod := b.podSpec()
	pod.InitContainers = []corev1.Container{{
		Name:    containerWait,
		Image:   b.cfg.Image,
		Command: []string{"/bin/sh", "-c", waitScript},
		Env: []corev1.EnvVar{
			{Name: "RESULTS", Value: ResultsDir},
			{Name: "SHARDS", Value: strconv.Itoa(b.cfg.Shards)},
			{Name: "TIMEOUT_SECONDS", Value: strconv.FormatInt(seconds(b.cfg.Timeout), 10)},
			{Name: "POLL_SECONDS", Value: strconv.FormatInt(seconds(waitPoll), 10)},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		VolumeMounts:    []corev1.VolumeMount{b.resultsMount()},
		SecurityContext: containerSecurity(),
	}}
	pod.Containers = []corev1.Container{{
		Name:            containerCheck,
		Image:           b.cfg.Image,
		Args:            checkArgs(),
		Resources:       b.cfg.Resources,
		VolumeMounts:    []corev1.VolumeMount{b.resultsMount()},
		SecurityContext: containerSecurity(),
	}}
	pod.Volumes = []corev1.Volume{b.resultsVolume()}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta(b.checkName(), componentCheck),
		Spec: batchv1.JobSpec{
			Completions: new(int32(1)),
			Parallelism: new(int32(1)),
			// A check that failed (exit 1) has written its report; run
			// again, it would say the same.
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(componentCheck)},
				Spec:       pod,
			},
		},
	}
}

// podSpec is what the shard and check pods share: no restart (a Job's
// pods are retried, if at all, by the Job) and an unprivileged user whose
// group owns the results volume.
func (b *builder) podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:        new(true),
			RunAsUser:           new(int64(RunAsUser)),
			RunAsGroup:          new(int64(RunAsUser)),
			FSGroup:             new(int64(RunAsUser)),
			FSGroupChangePolicy: new(corev1.FSGroupChangeOnRootMismatch),
			SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func (b *builder) scenarioMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: volumeScenario, MountPath: ScenarioDir, ReadOnly: true}
}

// resultsMount mounts the run's own directory of the claim, named as the
// run's objects are, at ResultsDir: a claim that outlives the run, or
// serves several (--pvc), holds no other run's shards for the check to
// wait for or merge. The kubelet makes the directory.
func (b *builder) resultsMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: volumeResults, MountPath: ResultsDir, SubPath: b.name}
}

// scenarioVolume places the ConfigMap's files, and the keys files of the
// user's Secret, where the scenario names them.
func (b *builder) scenarioVolume() corev1.Volume {
	cm := &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: b.name},
		Items:                []corev1.KeyToPath{{Key: b.src.File, Path: b.src.File}},
	}
	var secret *corev1.SecretProjection
	for _, m := range b.mounts {
		if !m.Secret {
			cm.Items = append(cm.Items, corev1.KeyToPath{Key: m.Key, Path: m.Path})
			continue
		}
		if secret == nil {
			secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: b.cfg.Secret}}
		}
		secret.Items = append(secret.Items, corev1.KeyToPath{Key: m.Key, Path: m.Path})
	}
	sources := []corev1.VolumeProjection{{ConfigMap: cm}}
	if secret != nil {
		sources = append(sources, corev1.VolumeProjection{Secret: secret})
	}
	return corev1.Volume{Name: volumeScenario, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: sources},
	}}
}

func (b *builder) resultsVolume() corev1.Volume {
	return corev1.Volume{Name: volumeResults, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: b.claimName()},
	}}
}

// notes are the comment lines at the head of the manifests.
func (b *builder) notes(keyFiles []mount) []string {
	sc := b.src.Scenario
	var out []string
	para := func(s string) { out = append(out, wrapComment(s, noteWidth)...) }
	line := func(s string) { out = append(out, "  "+s) }
	ns := ""
	if b.cfg.Namespace != "" {
		ns = " -n " + b.cfg.Namespace
	}
	shards := fmt.Sprintf("%d shards", b.cfg.Shards)
	if b.cfg.Shards == 1 {
		shards = "1 shard"
	}
	para(fmt.Sprintf("rlbench k8s: scenario %s, run %s, in %s of %s.", sc.Name, b.cfg.RunID, shards, b.cfg.Image))
	if sc.Redis.URL != "" {
		para("The shards agree their start through the scenario's Redis (redis.url): --barrier.")
		if u := sc.Redis.URL; scenarios.RedactURL(u) != u {
			para("redis.url holds a password, and the ConfigMap holds the scenario file as it is written: " +
				"anyone who can read ConfigMaps in the namespace can read it.")
		}
	} else {
		para(fmt.Sprintf("The scenario has no redis.url through which the shards could agree their start (--barrier), "+
			"so they start at %s on the limiter's clock (--start-at): apply these manifests before then.", b.cfg.StartAt.UTC().Format(time.RFC3339)))
	}
	if b.cfg.Secret != "" {
		para(fmt.Sprintf("The shards read %s from Secret %s; create it before applying:", secretContents(b.env, keyFiles), b.cfg.Secret))
		cmd := "kubectl" + ns + " create secret generic " + b.cfg.Secret
		for _, name := range b.env {
			cmd += fmt.Sprintf(` --from-literal=%s="$%s"`, name, name)
		}
		for _, m := range keyFiles {
			cmd += " --from-file=" + m.Key + "=" + shellPath(b.src.Dir, m.Name)
		}
		line(cmd)
	}
	para("Apply, then wait for the report (the check Job fails instead when a check fails):")
	line("kubectl" + ns + " apply -f FILE")
	line(fmt.Sprintf("kubectl%s wait --for=condition=complete --timeout=%ds job/%s", ns, seconds(b.cfg.Timeout+DefaultTimeoutSlack), b.checkName()))
	para(fmt.Sprintf("The report is in %s/report on the volume %s.", b.name, b.claimName()))
	return out
}

// shellPath is file as named relative to dir, for a command line.
func shellPath(dir, file string) string {
	p := file
	if dir != "" && dir != "." {
		p = dir + "/" + file
	}
	if strings.ContainsAny(p, " '\"$`\\") {
		return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	return p
}

// seconds is d in whole seconds, rounded up.
func seconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

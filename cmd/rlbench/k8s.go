package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/k8s"
	"github.com/rlbench/rlbench/scenarios"
)

// k8sCommand prints the Kubernetes manifests of a sharded run.
type k8sCommand struct {
	stdout io.Writer
	// now is the clock the shards' start time is read from.
	now func() time.Time
}

// k8sFlags are k8s's flags.
type k8sFlags struct {
	shards                                             int
	image, runID, namespace, secret, pvc, storageClass string
	volumeSize, cpu, cpuLimit, memory, memoryLimit     quantityFlag
	startDelay, timeout                                time.Duration
}

func (f *k8sFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("k8s", flag.ContinueOnError)
	fs.IntVar(&f.shards, "shards", 0, fmt.Sprintf("split the run into `N` shards, 1 to %d, each a pod of an Indexed Job (default the scenario's shards.count)", history.MaxShards))
	fs.StringVar(&f.image, "image", "", "the rlbench `IMAGE` the pods run, built from the repository's Dockerfile and pushed where the cluster pulls from (required)")
	fs.StringVar(&f.runID, "run-id", "", "the run's `ID`, eight hex digits, which every shard sends as and the objects are named by (default a random one)")
	fs.DurationVar(&f.startDelay, "start-delay", k8s.DefaultStartDelay, "for a scenario without redis.url: start the shards this long after now (--start-at), "+
		"time to apply the manifests and start the pods")
	fs.StringVar(&f.namespace, "namespace", "", "put the objects in namespace `NS` (default kubectl's)")
	fs.StringVar(&f.secret, "secret", "", "the Secret `NAME` holding what the scenario must not carry: each variable its headers take (${NAME}), "+
		"under its name, and its keys files; required when it takes any")
	fs.StringVar(&f.pvc, "pvc", "", "keep the results on the existing ReadWriteMany claim `NAME` instead of a new one")
	fs.StringVar(&f.storageClass, "storage-class", "", "make the results' claim in the ReadWriteMany storage `CLASS` (default the cluster's default class)")
	f.volumeSize = bytesQuantity(k8s.DefaultVolumeSize, minVolumeSize, "Gi")
	fs.Var(&f.volumeSize, "volume-size", fmt.Sprintf("the `SIZE` of the results' claim in bytes, at least %s, as 1Gi or 500Mi: the shards' histories and the report", minVolumeSize))
	f.cpu.set(k8s.DefaultCPURequest)
	fs.Var(&f.cpu, "cpu", "the CPU each shard and the check request, in `CORES` (500m is half a core)")
	f.cpuLimit.set(k8s.DefaultCPULimit)
	fs.Var(&f.cpuLimit, "cpu-limit", "the most CPU each may use, in `CORES`; 0 for no limit")
	f.memory = bytesQuantity(k8s.DefaultMemoryRequest, minMemory, "Mi")
	fs.Var(&f.memory, "memory", fmt.Sprintf("the memory each shard and the check request, in `BYTES`, at least %s (512Mi, 2Gi)", minMemory))
	f.memoryLimit = bytesQuantity(k8s.DefaultMemoryLimit, minMemory, "Mi")
	fs.Var(&f.memoryLimit, "memory-limit", "the most memory each may use, in `BYTES`; 0 for no limit")
	fs.DurationVar(&f.timeout, "timeout", 0, "end the shards' Job, and stop the check waiting for them, this long after they start "+
		fmt.Sprintf("(default the start delay, the scenario's traffic and %v)", k8s.DefaultTimeoutSlack))
	return fs
}

var k8sHelp = help{
	synopsis: "rlbench k8s --shards N --image IMAGE [flags] SCENARIO|NAME > run.yaml",
	about: `Prints the Kubernetes manifests of a run of SCENARIO (a file, or a shipped
scenario's name) split into N shards: rlbench splits the run, synchronises its
start, records each shard and merges the records; Kubernetes places the
shards. N is the scenario's shards.count unless --shards says. 'kubectl apply
-f run.yaml' creates, in this order:

  ConfigMap              the scenario file and the body files it names
  PersistentVolumeClaim  ReadWriteMany, the results (none with --pvc); the
                         run's directory on it is /results in the pods
  Job NAME-shards        Indexed, N pods: rlbench run --shard I/N into
                         /results/shard-I
  Job NAME-check         waits for every shard's run.json, then rlbench check
                         writes /results/report (report.html, summary.json,
                         junit.xml)

The shards agree their start through the scenario's Redis (redis.url), or,
without one, start at now + --start-delay on the limiter's clock (as
target.clock declares it), which a comment line at the top says. Variables the scenario's headers take (${NAME}) and its keys files come
from the Secret --secret names, never from the manifests; the comment lines
give the 'kubectl create secret' command. A scenario its shards could not
share (see 'rlbench run --shard'), or that would start a Redis or a fault
proxy in every pod, cannot be sharded.

  rlbench k8s --shards 4 --image registry.example/rlbench:v1 \
    --secret orders-api scenarios/examples/orders-sharded.yaml > run.yaml`,
	footer: `Exit codes: 0 written, 2 invalid flags or a scenario that cannot be sharded.`,
}

func (c *k8sCommand) Usage() string { return k8sHelp.text(new(k8sFlags).flagSet()) }

func (c *k8sCommand) Run(_ context.Context, args []string) error {
	f := &k8sFlags{}
	fs := f.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	switch fs.NArg() {
	case 0:
		return usagef("name the scenario to shard: a file, or a shipped scenario's name")
	case 1:
	default:
		return usagef("a sharded run is one scenario; got %d arguments (%s)", fs.NArg(), strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	cfg, err := f.config(set)
	if err != nil {
		return err
	}
	src, err := k8s.LoadSource(fs.Arg(0))
	if err != nil {
		return err
	}
	sc := src.Scenario
	if !set["shards"] {
		if sc.Shards.Count == 0 {
			return usagef("--shards is required: the number of shards, 1 to %d (scenario %s gives no shards.count)", history.MaxShards, sc.Name)
		}
		cfg.Shards = sc.Shards.Count
	}
	if sc.Redis.URL != "" {
		if set["start-delay"] {
			return usagef("--start-delay: scenario %s has redis.url, through which the shards agree their start (--barrier); leave --start-delay out", sc.Name)
		}
	} else {
		now := time.Now
		if c.now != nil {
			now = c.now
		}
		// --start-at is read on the limiter's clock: this host's plus the
		// offset the scenario declares (target.clock, which a scenario
		// without redis.url needs to be sharded). Whole seconds, rounded up.
		at := now().Add(f.startDelay)
		if c := sc.Target.Clock; c != nil {
			at = at.Add(c.Offset)
		}
		cfg.StartAt = at.Add(time.Second - 1).Truncate(time.Second).UTC()
	}
	if least := k8s.DefaultTimeout(sc, f.startDelay) - k8s.DefaultTimeoutSlack; cfg.Timeout == 0 {
		cfg.Timeout = k8s.DefaultTimeout(sc, f.startDelay)
	} else if cfg.Timeout < least {
		return usagef("--timeout %v: the shards' Job would end before they finish: they start %v after it is applied and their traffic lasts %v; give at least %v (default %v)",
			cfg.Timeout, f.startDelay, least-f.startDelay, least, k8s.DefaultTimeout(sc, f.startDelay))
	}
	m, err := k8s.New(src, cfg)
	switch {
	case errors.Is(err, k8s.ErrNeedsSecret):
		return usagef("--secret is required: %v", err)
	case errors.Is(err, k8s.ErrSecretUnused):
		return usagef("--secret %s: %v; leave --secret out", f.secret, err)
	case err != nil:
		return err
	}
	return m.WriteYAML(c.stdout)
}

// config checks the flags and returns the Config they give, all but what
// needs the scenario: the start time, a default timeout and shard count.
// set holds the names of the flags given.
func (f *k8sFlags) config(set map[string]bool) (k8s.Config, error) {
	cfg := k8s.Config{Shards: f.shards, Image: f.image, Namespace: f.namespace, Secret: f.secret, Claim: f.pvc, StorageClass: f.storageClass, Timeout: f.timeout}
	switch {
	case set["shards"] && (f.shards < 1 || f.shards > history.MaxShards):
		return cfg, usagef("--shards %d: want 1 to %d", f.shards, history.MaxShards)
	case f.image == "":
		return cfg, usagef("--image is required: the rlbench image the pods run; build it from the repository's Dockerfile " +
			"(docker build -t REGISTRY/rlbench:TAG .) and push it where the cluster pulls from")
	case strings.ContainsFunc(f.image, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return cfg, usagef("--image %q: an image reference holds no space or control character, as registry.example/rlbench:v1", f.image)
	case f.startDelay <= 0 || f.startDelay > 24*time.Hour:
		return cfg, usagef("--start-delay %v: want a delay above 0 and up to 24h", f.startDelay)
	case f.timeout < 0 || set["timeout"] && f.timeout < time.Second:
		return cfg, usagef("--timeout %v: want at least 1s", f.timeout)
	case f.pvc != "" && (set["storage-class"] || set["volume-size"]):
		return cfg, usagef("--pvc names a claim that exists; --storage-class and --volume-size describe the one rlbench would make instead: give one or the other")
	}
	id, err := scenarios.ParseRunID(f.runID)
	if err != nil {
		return cfg, usagef("--run-id: %v", err)
	}
	if id == "" {
		id = scenarios.NewRunID()
	}
	cfg.RunID = id
	for _, n := range []struct{ flag, value, what string }{
		{"namespace", f.namespace, "label"}, {"secret", f.secret, "subdomain"}, {"pvc", f.pvc, "subdomain"}, {"storage-class", f.storageClass, "subdomain"},
	} {
		if n.value == "" {
			continue
		}
		var errs []string
		if n.what == "label" {
			errs = validation.IsDNS1123Label(n.value)
		} else {
			errs = validation.IsDNS1123Subdomain(n.value)
		}
		if len(errs) > 0 {
			return cfg, usagef("--%s %q is not a Kubernetes name: %s", n.flag, n.value, strings.Join(errs, "; "))
		}
	}
	if f.volumeSize.q.Sign() <= 0 {
		return cfg, usagef("--volume-size %s: want a positive size, as 1Gi", f.volumeSize.String())
	}
	cfg.VolumeSize = f.volumeSize.q
	res, err := resources(f)
	if err != nil {
		return cfg, err
	}
	cfg.Resources = res
	return cfg, nil
}

// resources returns the requests and limits the flags give: requests
// above zero, limits zero (none) or at least the request.
func resources(f *k8sFlags) (corev1.ResourceRequirements, error) {
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, r := range []struct {
		name             corev1.ResourceName
		request, limit   *quantityFlag
		reqFlag, limFlag string
	}{
		{corev1.ResourceCPU, &f.cpu, &f.cpuLimit, "cpu", "cpu-limit"},
		{corev1.ResourceMemory, &f.memory, &f.memoryLimit, "memory", "memory-limit"},
	} {
		switch {
		case r.request.q.Sign() <= 0:
			return res, usagef("--%s %s: want a positive quantity", r.reqFlag, r.request)
		case r.limit.q.Sign() < 0:
			return res, usagef("--%s %s: want a positive quantity, or 0 for no limit", r.limFlag, r.limit)
		case r.limit.q.Sign() > 0 && r.limit.q.Cmp(r.request.q) < 0:
			return res, usagef("--%s %s is below --%s %s: a limit is at least the request", r.limFlag, r.limit, r.reqFlag, r.request)
		}
		res.Requests[r.name] = r.request.q
		if r.limit.q.Sign() > 0 {
			res.Limits[r.name] = r.limit.q
		}
	}
	if len(res.Limits) == 0 {
		res.Limits = nil
	}
	return res, nil
}

// The least memory and results' claim the k8s flags take: a pod of the Go
// runtime, rlbench and its histories' buffers does not start in less than
// tens of MiB, and a smaller number is a misplaced suffix ("500m" is half a
// byte in Kubernetes quantities, "512" 512 bytes).
const (
	minMemory     = "64Mi"
	minVolumeSize = "16Mi"
)

// quantityFlag is a Kubernetes resource quantity flag: CPU in cores
// ("500m", "2"), or with bytes set a size in bytes ("512Mi", "1Gi").
type quantityFlag struct {
	q resource.Quantity
	// bytes marks a size in bytes, which Set takes in whole bytes (no
	// milli suffix) and, above 0, of at least min; unit is the binary
	// suffix its "did you mean" suggests, as Mi.
	bytes bool
	min   resource.Quantity
	unit  string
}

// bytesQuantity returns a quantityFlag of bytes at value def, taking at
// least min above 0 and suggesting unit for a number too small.
func bytesQuantity(def, min, unit string) quantityFlag {
	return quantityFlag{q: resource.MustParse(def), bytes: true, min: resource.MustParse(min), unit: unit}
}

// set sets the flag's value to s, a quantity known to parse.
func (f *quantityFlag) set(s string) { f.q = resource.MustParse(s) }

func (f *quantityFlag) String() string {
	if f == nil {
		return "0"
	}
	return f.q.String()
}

// Set parses s; the error says what the flag takes. A size in bytes
// refuses a fraction of a byte ("500m") and a positive size below its
// least, suggesting the number with its unit ("did you mean 500Mi?").
// Negative sizes are left for the caller, which says what it takes.
func (f *quantityFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	q, err := resource.ParseQuantity(s)
	switch {
	case err != nil && f.bytes:
		return fmt.Errorf("not a quantity; want bytes with a binary suffix, as 512Mi or 1Gi")
	case err != nil:
		return fmt.Errorf("not a quantity; want cores, as 500m (half a core) or 2")
	case !f.bytes || q.Sign() <= 0:
	case q.MilliValue()%1000 != 0:
		return fmt.Errorf("a fraction of a byte (m is milli in Kubernetes quantities); want at least %s%s", f.min.String(), f.suggest(s))
	case q.Cmp(f.min) < 0:
		return fmt.Errorf("below the least this takes, %s%s", f.min.String(), f.suggest(s))
	}
	f.q = q
	return nil
}

// suggest returns "; did you mean NUnit?" for s, the number of s with the
// flag's unit in place of its suffix, when that is a size the flag takes.
func (f *quantityFlag) suggest(s string) string {
	n := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if n == "" || strings.ContainsAny(n, "+-eE") {
		return ""
	}
	q, err := resource.ParseQuantity(n + f.unit)
	if err != nil || q.Cmp(f.min) < 0 {
		return ""
	}
	return fmt.Sprintf("; did you mean %s%s?", n, f.unit)
}

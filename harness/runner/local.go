//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/shardsync"
	"github.com/rlbench/rlbench/scenarios"
)

// LocalTarget is the target the parent of local shards (RunLocalShards)
// started once for all of its shards: the base URLs and names of the
// instances, and the Redis they keep the budget in. A shard given it
// (Options.Target) fires at it as an external target, instead of starting
// instances of its own. It travels to the shards as a JSON file
// (WriteFile, ReadLocalTarget).
type LocalTarget struct {
	// URLs are the instances' base URLs, Names their names, one for one.
	URLs  []string `json:"urls"`
	Names []string `json:"names"`
	// RedisURL is the Redis the instances keep the budget in, which the
	// shards read TIME from and meet in; empty for instances with a
	// budget of their own (store: memory), which read this host's clock.
	RedisURL string `json:"redis_url,omitempty"`
	// ClockResolution is the step of the instances' limiter clock.
	ClockResolution time.Duration `json:"clock_resolution_ns"`
	// IdentitiesFresh reports whether every identity began the run unknown
	// to the limiter, as the parent's start of the target and its Redis
	// made it (Outcome.IdentitiesFresh).
	IdentitiesFresh bool `json:"identities_fresh"`
}

// Apply returns sc as an external target aimed at t: the instances' URLs,
// the Redis as redis.url (provider external), or, for instances without
// Redis, a declared clock offset of 0 ± 0 (they read this host's clock).
// The routes, identities, traffic and checks are sc's.
func (t *LocalTarget) Apply(sc *scenarios.Scenario) *scenarios.Scenario {
	c := *sc
	c.Target.External = slices.Clone(t.URLs)
	c.Target.ExternalInstances = len(t.URLs)
	c.Target.Instances, c.Target.Store, c.Target.Peer, c.Target.ClockSkew = 0, "", "", nil
	c.Target.ClockResolution = t.ClockResolution
	c.Redis = scenarios.Redis{Provider: scenarios.ProviderNone}
	if t.RedisURL != "" {
		c.Redis = scenarios.Redis{Provider: scenarios.ProviderExternal, URL: t.RedisURL}
	} else if c.Target.Clock == nil {
		c.Target.Clock = &scenarios.Clock{}
	}
	return &c
}

// WriteFile writes t to path as JSON, readable by its owner alone (the
// Redis URL may carry a password).
func (t *LocalTarget) WriteFile(path string) error {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write the local shards' target: %w", err)
	}
	return nil
}

// ReadLocalTarget reads a LocalTarget that WriteFile wrote. Errors name
// the file.
func ReadLocalTarget(path string) (*LocalTarget, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the local shards' target: %w", err)
	}
	t := &LocalTarget{}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(t.URLs) == 0 || len(t.URLs) != len(t.Names) {
		return nil, fmt.Errorf("%s: want as many names as URLs, and at least one URL; got %d URLs, %d names", path, len(t.URLs), len(t.Names))
	}
	return t, nil
}

// LocalShards is how RunLocalShards splits a scenario over shards on this
// machine. The clock fictions (HostClock) are per shard, by index; a list
// shorter than Count leaves the rest at 0.
type LocalShards struct {
	// Count is the number of shards, 2 to history.MaxShards.
	Count int
	// Skews, Misreports and UncertaintyFloors are each shard's
	// --clock-skew, --clock-misreport and --clock-uncertainty-floor.
	Skews, Misreports, UncertaintyFloors []time.Duration
	// Args are more `rlbench run` flags for every shard, as --claim.
	Args []string
	// Binary is the rlbench executable the shards run; empty means
	// Options.Binary, else this process's own.
	Binary string
}

// DefaultLocalShardSlack bounds, beyond the scenario's traffic and the
// barrier's timeout, how long RunLocalShards waits for its shards: their
// start, load generator calibration and checks.
const DefaultLocalShardSlack = 3 * time.Minute

// LocalShardLead and LocalShardTolerance are the barrier's lead and the
// start's tolerance the shards of RunLocalShards take: on one busy
// machine N processes wake later than on N hosts.
const (
	LocalShardLead      = 3 * time.Second
	LocalShardTolerance = time.Second
)

// LocalShardable returns why sc cannot be split over local shards, or nil:
// sc as the external target its shards see (LocalTarget.Apply) must be
// shardable (scenarios.Scenario.Shardable; a drill's faults are not), and
// its identities' Retry-After clients must be its shards' own.
func (r *Runner) LocalShardable(sc *scenarios.Scenario) error {
	t := &LocalTarget{URLs: []string{"http://127.0.0.1:1"}, Names: []string{"instance-1"}}
	if sc.Redis.Provider != scenarios.ProviderNone {
		t.RedisURL = "redis://127.0.0.1:1/0"
	}
	return t.Apply(sc).Shardable()
}

// RunLocalShards runs sc split over ls.Count shards on this machine, each a
// child `rlbench run --shard I/N` process, and checks them as one run. It
// provisions Redis and starts the instances as Run does, once, writes
// them down as a LocalTarget, launches the shards against it (meeting at a
// barrier in its Redis, or at a start 5 s ahead on this host's clock
// without one), waits for them (bounded by the scenario's traffic,
// the barrier's timeout and DefaultLocalShardSlack), scans the Redis for
// keys without a TTL when Options.ScanKeys is set, stops the target and
// merges the shards (checker.CheckShards), the merged history written to
// OutDir/NAME/history.jsonl.gz. The shards' run directories are
// OutDir/NAME/shards/shard-I, their output in shard-I.log beside them.
//
// Every shard still running is interrupted, then killed, on every error
// and when ctx ends. Errors: those of Run's set-up, LocalShardable's, a
// shard that exits with a usage error (2) or a signal or leaves no record,
// a shard that could not run (its recorded error), the bound, and the
// merged check's.
func (r *Runner) RunLocalShards(ctx context.Context, sc *scenarios.Scenario, ls LocalShards) (*checker.ShardedReport, error) {
	fail := func(err error) (*checker.ShardedReport, error) {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if ls.Count < 2 || ls.Count > history.MaxShards {
		return fail(fmt.Errorf("%d local shards: want 2 to %d", ls.Count, history.MaxShards))
	}
	if err := r.LocalShardable(sc); err != nil {
		return fail(err)
	}
	dir, err := filepath.Abs(filepath.Join(r.opts.OutDir, sc.Name))
	if err != nil {
		return fail(err)
	}
	shardsDir := filepath.Join(dir, "shards")
	if err := os.RemoveAll(shardsDir); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(shardsDir, 0o755); err != nil {
		return fail(err)
	}
	var cleanups []func()
	defer func() {
		for _, c := range slices.Backward(cleanups) {
			c()
		}
	}()
	out := &Outcome{Scenario: sc}
	red, rdb, err := r.provision(ctx, sc, out, &cleanups)
	if err != nil {
		return fail(err)
	}
	redisURL := ""
	if red != nil {
		redisURL = red.URL()
	}
	runID := r.opts.RunID
	if runID == "" {
		runID = scenarios.NewRunID()
	}
	_, urls, names, _, err := r.startTarget(ctx, sc, dir, redisURL, runID, nil, &cleanups)
	if err != nil {
		return fail(err)
	}
	target := &LocalTarget{
		URLs: urls, Names: names, RedisURL: redisURL, ClockResolution: clockResolution(sc),
		IdentitiesFresh: identitiesFresh(sc, r.opts.RunID != "", out.Redis.Provider),
	}
	targetPath := filepath.Join(shardsDir, "target.json")
	if err := target.WriteFile(targetPath); err != nil {
		return fail(err)
	}
	source, err := scenarioFile(sc, shardsDir)
	if err != nil {
		return fail(err)
	}
	bound := DefaultLocalShardSlack + shardsync.DefaultTimeout
	for _, ph := range sc.Phases {
		bound += ph.Length()
	}
	common := []string{"run", "--run-id", string(runID), "--local-target", targetPath}
	// A busy machine wakes a shard late: a longer lead and tolerance than a
	// fleet's, since each shard's requests are placed by its own record of
	// when it began, whatever the lateness.
	common = append(common, "--start-tolerance", LocalShardTolerance.String())
	if redisURL != "" {
		common = append(common, "--barrier", "--barrier-lead", LocalShardLead.String())
	} else {
		common = append(common, "--start-at", time.Now().Add(5*time.Second).UTC().Format(time.RFC3339Nano))
	}
	common = append(common, ls.Args...)
	bin := ls.Binary
	if bin == "" {
		bin = r.opts.Binary
	}
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fail(err)
		}
	}
	dirs := make([]string, ls.Count)
	cmds := make([]*exec.Cmd, 0, ls.Count)
	done := make(chan error, ls.Count)
	running := 0
	// stop interrupts every shard still running, then kills it, and waits
	// for them all.
	stop := func() {
		if running == 0 {
			return
		}
		// Interrupt every shard still running, then kill it, by its pid.
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGINT)
		}
		kill := time.AfterFunc(10*time.Second, func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
			}
		})
		for ; running > 0; running-- {
			<-done
		}
		kill.Stop()
	}
	defer stop()
	r.logf("%s: %s on this machine, run %s, against %s", sc.Name, checker.Count(ls.Count, "local shards"), runID, strings.Join(urls, " "))
	for i := range ls.Count {
		dirs[i] = filepath.Join(shardsDir, fmt.Sprintf("shard-%d", i))
		args := append(slices.Clone(common), "--shard", history.Shard{Index: i, Count: ls.Count}.String(), "--out", dirs[i])
		for _, fl := range []struct {
			name string
			v    []time.Duration
		}{{"--clock-skew", ls.Skews}, {"--clock-misreport", ls.Misreports}, {"--clock-uncertainty-floor", ls.UncertaintyFloors}} {
			if i < len(fl.v) && fl.v[i] != 0 {
				args = append(args, fl.name+"="+fl.v[i].String())
			}
		}
		args = append(args, source)
		logf, err := os.Create(filepath.Join(shardsDir, fmt.Sprintf("shard-%d.log", i)))
		if err != nil {
			return fail(err)
		}
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = logf, logf
		if err := c.Start(); err != nil {
			logf.Close()
			return fail(fmt.Errorf("start shard %d: %w", i, err))
		}
		cmds = append(cmds, c)
		running++
		go func() {
			err := c.Wait()
			logf.Close()
			done <- shardExit(i, c, err, logf.Name())
		}()
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	var shardErr error
	for range ls.Count {
		select {
		case err := <-done:
			running--
			shardErr = errors.Join(shardErr, err)
		case <-ctx.Done():
			// The shards have had their interrupt too: once they have
			// written what they ran, say how to check it.
			stop()
			return fail(&InterruptedError{Cause: context.Cause(ctx), Advice: interruptedAdvice(filepath.Join(r.opts.OutDir, sc.Name, "shards"), sc.Name, ls.Count)})
		case <-timer.C:
			return fail(fmt.Errorf("the local shards did not finish within %v", bound))
		}
	}
	if shardErr != nil {
		return fail(shardErr)
	}
	scs, err := checker.LoadShards(dirs)
	if err != nil {
		return fail(err)
	}
	k := slices.IndexFunc(scs, func(s checker.ShardedScenario) bool { return s.Name == sc.Name })
	if k < 0 {
		return fail(fmt.Errorf("no shard recorded the scenario in %s", shardsDir))
	}
	opts := checker.ShardOptions{}
	if r.opts.ScanKeys && rdb != nil {
		first := time.Time{}
		for _, sh := range scs[k].Shards {
			if sh.Record.Error != "" {
				return fail(fmt.Errorf("the shard in %s could not run: %s", sh.Dir, sh.Record.Error))
			}
			if first.IsZero() || sh.Record.Start.Before(first) {
				first = sh.Record.Start
			}
		}
		if opts.KeyScan, err = scanKeys(ctx, rdb, first); err != nil {
			return fail(err)
		}
	}
	for _, c := range slices.Backward(cleanups) {
		c()
	}
	cleanups = nil
	rel := filepath.Join(sc.Name, "history.jsonl.gz")
	f, err := os.Create(filepath.Join(r.opts.OutDir, rel))
	if err != nil {
		return fail(fmt.Errorf("write the merged history: %w", err))
	}
	defer f.Close()
	opts.History = f
	rep, err := checker.CheckShards(scs[k].Shards, opts)
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(fmt.Errorf("write the merged history: %w", err))
	}
	rep.Record.History, rep.Record.Source, rep.Record.Redis = rel, sc.Source, out.Redis
	// Named within the run directory, which can then be copied whole.
	rep.Notes = append(rep.Notes, fmt.Sprintf("run as %s on this machine against one target and Redis the parent run started; the shards' runs are in %s of the run directory",
		checker.Count(ls.Count, "local shards"), filepath.Join(sc.Name, "shards")))
	return rep, nil
}

// InterruptedError is RunLocalShards's error when its context ends before
// its shards finish. Advice says what of the shards' runs exists and the
// commands that check it; it is empty when they recorded nothing.
type InterruptedError struct {
	Cause  error
	Advice string
}

func (e *InterruptedError) Error() string {
	if e.Advice == "" {
		return "interrupted: " + e.Cause.Error()
	}
	return "interrupted: " + e.Cause.Error() + "\n" + e.Advice
}

// Unwrap returns the context's cause.
func (e *InterruptedError) Unwrap() error { return e.Cause }

// interruptedAdvice returns, for the count shards of scenario name whose
// run directories are shardsDir/shard-I, the commands that check what they
// left: the shards that finished (run.json) as one run, and each other
// shard's history cut short on its own. It names only what exists, each
// path as shardsDir gives it; "" when no shard left anything.
func interruptedAdvice(shardsDir, name string, count int) string {
	var finished, cut []string
	for i := range count {
		dir := filepath.Join(shardsDir, fmt.Sprintf("shard-%d", i))
		hist := filepath.Join(dir, name, "history.jsonl.gz")
		switch {
		case fileExists(filepath.Join(dir, "run.json")):
			finished = append(finished, shellQuote(dir))
		case fileExists(hist):
			cut = append(cut, shellQuote(hist))
		}
	}
	var b strings.Builder
	switch {
	case len(finished) == count:
		fmt.Fprintf(&b, "every shard finished; check them as one run:\n  rlbench check %s\n", strings.Join(finished, " "))
	case len(finished) > 0:
		fmt.Fprintf(&b, "%d of %d shards finished; check those as one run, the verdicts covering them only:\n  rlbench check --allow-missing-shards %s\n",
			len(finished), count, strings.Join(finished, " "))
	}
	if len(cut) > 0 {
		fmt.Fprintf(&b, "%s cut short; check each history alone, its verdicts covering that shard's requests before the interrupt:\n", checker.Count(len(cut), "shards"))
		for _, h := range cut {
			fmt.Fprintf(&b, "  rlbench check %s\n", h)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// shellQuote returns s as a POSIX shell word: as it is when it holds only
// characters no shell reads specially, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,=@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shardExit is the error of shard i's process c, which Wait ended with
// err: nil for a run that recorded its verdicts (exit 0, 1 for failed
// checks, 3 for the harness's errors, which the merged check reports
// again), else the exit status and where the shard's output is.
func shardExit(i int, c *exec.Cmd, err error, log string) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case 1, 3:
			return nil
		}
	}
	if err == nil {
		return nil
	}
	tail := ""
	if data, rerr := os.ReadFile(log); rerr == nil {
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		tail = ": " + strings.Join(lines[max(0, len(lines)-3):], " | ")
	}
	return fmt.Errorf("shard %d (pid %d): %v (output in %s)%s", i, c.Process.Pid, err, log, tail)
}

// scenarioFile returns the file a shard loads sc from: its own, or for a
// scenario without one (embedded) its text written into dir.
func scenarioFile(sc *scenarios.Scenario, dir string) (string, error) {
	if sc.Source != "" && !strings.HasPrefix(sc.Source, "embedded:") {
		return filepath.Abs(sc.Source)
	}
	if len(sc.Text) == 0 {
		return "", fmt.Errorf("scenario %s has no file or text to hand to its shards", sc.Name)
	}
	path := filepath.Join(dir, sc.Name+".yaml")
	if err := os.WriteFile(path, sc.Text, 0o644); err != nil {
		return "", fmt.Errorf("write the scenario for the shards: %w", err)
	}
	return path, nil
}

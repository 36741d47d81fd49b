//go:build unix

package faults

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/scenarios"
)

func commandFault(inject, heal string, at, d, timeout time.Duration) Fault {
	return Fault{Kind: scenarios.FaultCommand, Inject: inject, Heal: heal, At: at, Duration: d, Timeout: timeout, Effect: scenarios.EffectUnavailable}
}

// TestCommandFault: the inject and heal commands run with sh -c in the
// scenario's directory; their output, exit code and duration are recorded;
// the window starts when inject was sent and ends when heal returned.
func TestCommandFault(t *testing.T) {
	dir := t.TempDir()
	f := commandFault("pwd; echo oops >&2; sleep 0.1", "echo healed > healed.txt; echo done", 10*time.Millisecond, 50*time.Millisecond, 5*time.Second)
	env := Env{Dir: dir}
	if err := Validate([]Fault{f}, env); err != nil {
		t.Fatal(err)
	}
	w := Start(context.Background(), time.Now(), []Fault{f}, env).Wait()[0]
	if w.Err != "" {
		t.Fatalf("window error %q", w.Err)
	}
	if w.Inject == nil || w.Heal == nil {
		t.Fatalf("window %+v: want both commands recorded", w)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"inject stdout", w.Inject.Stdout, dir + "\n"},
		{"inject stderr", w.Inject.Stderr, "oops\n"},
		{"inject exit code", w.Inject.ExitCode, 0},
		{"inject dir", w.Inject.Dir, dir},
		{"heal stdout", w.Heal.Stdout, "done\n"},
		{"heal exit code", w.Heal.ExitCode, 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "healed.txt")); err != nil || string(data) != "healed\n" {
		t.Errorf("heal did not run in %s: %q, %v", dir, data, err)
	}
	// The order of the stamps: sent ≤ inject started; inject returned after
	// it took its 100 ms; healed Duration later; heal returned last.
	if !(w.FromNs >= f.At.Nanoseconds() && w.FromNs <= w.Inject.StartNs &&
		w.InjectedNs >= w.Inject.StartNs+w.Inject.Duration.Nanoseconds() && w.Inject.Duration >= 100*time.Millisecond &&
		w.HealNs-w.InjectedNs >= f.Duration.Nanoseconds() && w.HealNs <= w.Heal.StartNs &&
		w.ToNs >= w.Heal.StartNs+w.Heal.Duration.Nanoseconds()) {
		t.Fatalf("stamps out of order: from %d, inject %+v, injected %d, heal sent %d, heal %+v, to %d",
			w.FromNs, w.Inject, w.InjectedNs, w.HealNs, w.Heal, w.ToNs)
	}
	from, to := w.InEffect()
	if from != w.InjectedNs || to != w.HealNs {
		t.Fatalf("InEffect = %d, %d; want %d, %d", from, to, w.InjectedNs, w.HealNs)
	}
}

// TestCommandFaultFailures: a failing or hanging command fails the fault
// with its output in the error; a failed inject is healed at once; a
// command that outlives its timeout has its process group killed.
func TestCommandFaultFailures(t *testing.T) {
	t.Run("inject exits non-zero", func(t *testing.T) {
		dir := t.TempDir()
		f := commandFault("echo 'No such container: redis' >&2; exit 3", "echo healed > healed.txt", 0, time.Hour, 5*time.Second)
		w := Start(context.Background(), time.Now(), []Fault{f}, Env{Dir: dir}).Wait()[0]
		for _, want := range []string{`inject command "echo 'No such container: redis' >&2; exit 3" exited 3 after`, "stderr: No such container: redis"} {
			if !strings.Contains(w.Err, want) {
				t.Errorf("Err = %q, want it to contain %q", w.Err, want)
			}
		}
		if w.Inject.ExitCode != 3 || w.Heal == nil || w.ToNs == 0 {
			t.Fatalf("window %+v: want exit 3 recorded and the heal run at once", w)
		}
		if _, err := os.Stat(filepath.Join(dir, "healed.txt")); err != nil {
			t.Fatalf("heal after a failed inject: %v", err)
		}
	})
	t.Run("heal exits non-zero", func(t *testing.T) {
		w := Start(context.Background(), time.Now(), []Fault{commandFault("true", "echo stuck; exit 1", 0, time.Millisecond, 5*time.Second)}, Env{}).Wait()[0]
		if want := `heal command "echo stuck; exit 1" exited 1 after`; !strings.Contains(w.Err, want) || !strings.Contains(w.Err, "stdout: stuck") {
			t.Fatalf("Err = %q, want %q and the output", w.Err, want)
		}
	})
	t.Run("timeout kills the process group", func(t *testing.T) {
		dir := t.TempDir()
		// The shell starts a child in its group and waits for it.
		f := commandFault("sleep 30 & echo $! > child.pid; wait", "", 0, time.Millisecond, 300*time.Millisecond)
		began := time.Now()
		w := Start(context.Background(), time.Now(), []Fault{f}, Env{Dir: dir}).Wait()[0]
		if took := time.Since(began); took > 10*time.Second {
			t.Fatalf("the timed-out command held the schedule for %v", took)
		}
		if !w.Inject.TimedOut || w.Inject.ExitCode != -1 || !strings.Contains(w.Err, "timed out after 300ms; its process group was killed") {
			t.Fatalf("window %+v, inject %+v: want a timeout recorded", w, w.Inject)
		}
		data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("the command's child %d still runs after its group was killed", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("stop cancels a running inject", func(t *testing.T) {
		s := Start(context.Background(), time.Now(), []Fault{commandFault("sleep 30", "true", 0, time.Hour, time.Minute)}, Env{})
		deadline := time.Now().Add(5 * time.Second)
		for s.Windows()[0].FromNs == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // let sh start sleeping
		w := s.Stop()[0]
		if w.Inject == nil || !strings.Contains(w.Inject.Err, "cancelled") || w.Heal == nil || w.Heal.ExitCode != 0 {
			t.Fatalf("window %+v, inject %+v: want the inject cancelled and the heal run", w, w.Inject)
		}
	})
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// TestStartStampedBeforeActing: the window of rlbench's own fault starts
// before the fault acts, so a request cut off while it takes hold is
// inside it; InjectedNs is when it had taken effect.
func TestStartStampedBeforeActing(t *testing.T) {
	start := time.Now()
	red := &slowKill{start: start, took: 30 * time.Millisecond}
	w := Start(context.Background(), start, []Fault{{Kind: scenarios.FaultRedisKill, Duration: time.Millisecond}}, Env{Redis: red}).Wait()[0]
	if !(w.FromNs <= red.actedNs && red.actedNs <= w.InjectedNs && w.InjectedNs-w.FromNs >= red.took.Nanoseconds()) {
		t.Fatalf("from %d, killed at %d, injected %d: want from ≤ killed ≤ injected", w.FromNs, red.actedNs, w.InjectedNs)
	}
	if w.HealNs < w.InjectedNs || w.ToNs < w.HealNs {
		t.Fatalf("heal sent %d, healed %d after injected %d", w.HealNs, w.ToNs, w.InjectedNs)
	}
}

// slowKill is a Redis whose kill takes effect took after it is called.
type slowKill struct {
	start   time.Time
	took    time.Duration
	actedNs int64
}

func (s *slowKill) Kill() error {
	time.Sleep(s.took)
	s.actedNs = time.Since(s.start).Nanoseconds()
	return nil
}
func (s *slowKill) Restart(context.Context) error { return nil }
func (s *slowKill) Pause() error                  { return nil }
func (s *slowKill) Resume() error                 { return nil }

func TestCommandOutputCapped(t *testing.T) {
	run := runCommand(context.Background(), "head -c 100000 /dev/zero | tr '\\0' x", "", 5*time.Second, time.Now())
	if len(run.Stdout) != runrecord.MaxCommandOutput || !run.Truncated || run.ExitCode != 0 {
		t.Fatalf("stdout %d bytes, truncated %v, exit %d; want %d, true, 0", len(run.Stdout), run.Truncated, run.ExitCode, runrecord.MaxCommandOutput)
	}
}

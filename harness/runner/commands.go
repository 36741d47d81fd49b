package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/scenarios"
)

// writeCommandLogs writes, for every command fault of sc that ran a
// command, the file fault-N-command.log (N from 1, the fault's place in
// the scenario) in the scenario's directory under outDir, with each
// command, how it ended and its whole output, and records its path,
// relative to outDir, in the window's Log.
func writeCommandLogs(outDir string, sc *scenarios.Scenario, windows []runrecord.FaultWindow) error {
	var errs []error
	for i := range windows {
		w := &windows[i]
		if w.Inject == nil && w.Heal == nil {
			continue
		}
		rel := filepath.Join(sc.Name, fmt.Sprintf("fault-%d-command.log", i+1))
		var b strings.Builder
		fmt.Fprintf(&b, "# rlbench: fault %d of scenario %s (%s at %v for %v)\n", i+1, sc.Name, w.Kind, w.At, w.Duration)
		if w.Err != "" {
			fmt.Fprintf(&b, "# failed: %s\n", w.Err)
		}
		writeCommandRun(&b, "inject", w.Inject)
		writeCommandRun(&b, "heal", w.Heal)
		if err := os.WriteFile(filepath.Join(outDir, rel), []byte(b.String()), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("command fault %d: write its log: %w", i+1, err))
			continue
		}
		w.Log = rel
	}
	return errors.Join(errs...)
}

func writeCommandRun(b *strings.Builder, step string, c *runrecord.CommandRun) {
	if c == nil {
		return
	}
	fmt.Fprintf(b, "\n## %s: %s\n", step, c.Command)
	fmt.Fprintf(b, "dir: %s\n", c.Dir)
	fmt.Fprintf(b, "started: %v after the traffic's start\n", time.Duration(c.StartNs))
	fmt.Fprintf(b, "took: %v\n", c.Duration)
	fmt.Fprintf(b, "exit code: %d\n", c.ExitCode)
	if c.Err != "" {
		fmt.Fprintf(b, "error: %s\n", c.Err)
	}
	if c.Truncated {
		fmt.Fprintf(b, "output: cut at %d bytes per stream\n", runrecord.MaxCommandOutput)
	}
	for _, o := range []struct{ name, text string }{{"stdout", c.Stdout}, {"stderr", c.Stderr}} {
		fmt.Fprintf(b, "--- %s\n%s", o.name, o.text)
		if o.text != "" && !strings.HasSuffix(o.text, "\n") {
			b.WriteString("\n")
		}
	}
}

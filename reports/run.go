package reports

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// File names in a run directory.
const (
	SummaryFile = "summary.json"
	RunFile     = "run.json"
	ReportFile  = "report.html"
	JUnitFile   = "junit.xml"
)

// Run is a run directory loaded for rendering: the verdicts of summary.json,
// the record of run.json and, per scenario, its history condensed into
// fixed-size bins for display. The histories are read once and not kept;
// the checks themselves come from summary.json, never from the bins.
type Run struct {
	// Dir is the run directory.
	Dir string
	// Summary is summary.json.
	Summary *checker.Summary
	// Record is run.json; nil when the directory has none (a re-check
	// written by `rlbench check --summary`, say).
	Record *runrecord.RunRecord
	// Scenarios lists the scenarios in summary.json's order.
	Scenarios []*Scenario
}

// Scenario is one scenario of a Run.
type Scenario struct {
	// Summary is the scenario's verdicts.
	Summary checker.ScenarioSummary
	// Record is the scenario's run.json entry; nil when run.json lacks it.
	Record *runrecord.ScenarioRecord
	// HistoryError says why the scenario has no history to chart; empty
	// when it has one.
	HistoryError string

	digest *digest
}

// LoadRun reads summary.json, run.json (when present) and every scenario's
// history in dir, the histories in parallel, each streamed once. Errors: summary.json missing or malformed, run.json
// malformed. A missing or malformed history is not an error: the report
// then says so in place of that scenario's charts.
func LoadRun(dir string) (*Run, error) {
	f, err := os.Open(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, fmt.Errorf("load run: %w", err)
	}
	s, err := checker.ReadSummary(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", dir, err)
	}
	run := &Run{Dir: dir, Summary: s}
	switch f, err := os.Open(filepath.Join(dir, RunFile)); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("load run: %w", err)
	default:
		rec, err := runrecord.Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("load run %s: %w", dir, err)
		}
		run.Record = rec
	}
	var wg sync.WaitGroup
	for _, ss := range s.Scenarios {
		sc := &Scenario{Summary: ss, Record: run.scenarioRecord(ss.Name)}
		run.Scenarios = append(run.Scenarios, sc)
		wg.Go(func() { sc.loadHistory(dir) })
	}
	wg.Wait()
	return run, nil
}

func (r *Run) scenarioRecord(name string) *runrecord.ScenarioRecord {
	if r.Record == nil {
		return nil
	}
	for i := range r.Record.Scenarios {
		if r.Record.Scenarios[i].Name == name {
			return &r.Record.Scenarios[i]
		}
	}
	return nil
}

// loadHistory streams the scenario's history into its digest, or records
// why it cannot.
func (sc *Scenario) loadHistory(dir string) {
	rel := filepath.Join(sc.Summary.Name, "history.jsonl.gz")
	if sc.Record != nil {
		if sc.Record.Error != "" {
			sc.HistoryError = "the scenario could not run: " + sc.Record.Error
			return
		}
		if sc.Record.History != "" {
			rel = sc.Record.History
		}
	}
	path := filepath.Join(dir, rel)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			sc.HistoryError = fmt.Sprintf("no history was recorded (%s is missing)", rel)
		} else {
			sc.HistoryError = fmt.Sprintf("the history cannot be read: %v", err)
		}
		return
	}
	defer f.Close()
	d, err := digestHistory(f, rel, sc.Summary, sc.Record)
	if err != nil {
		sc.HistoryError = fmt.Sprintf("the history is malformed: %v", err)
		return
	}
	sc.digest = d
}

// WriteRunDir renders dir/report.html from the run directory dir; the run
// command calls it after writing summary.json, run.json and the histories,
// and `rlbench report` calls it on a saved run. Errors are LoadRun's and
// those of writing the file.
func WriteRunDir(dir string) error {
	run, err := LoadRun(dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, ReportFile)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := WriteHTML(f, run); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteRun writes the outputs of a run into the directory dir, which holds
// its histories already: summary.json from s (its Generated set to now),
// run.json from rec, junit.xml from s, then report.html rendered from them
// (WriteRunDir). Errors are those of writing each file, and WriteRunDir's.
func WriteRun(dir string, s *checker.Summary, rec *runrecord.RunRecord) error {
	s.Generated = time.Now().UTC()
	if err := s.WriteFile(filepath.Join(dir, SummaryFile)); err != nil {
		return err
	}
	relativeShardDirs(dir, rec)
	if err := rec.WriteFile(filepath.Join(dir, RunFile)); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, JUnitFile), func(w io.Writer) error { return WriteJUnit(w, s) }); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if err := WriteRunDir(dir); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// relativeShardDirs records the shard directories of a merged run that lie
// within dir or beside it (RelPath) relative to it, so that the run
// directory, or the directory holding it and its shards, can be moved or
// copied whole and `rlbench check` still finds its shards; those further
// away are kept as they are.
func relativeShardDirs(dir string, rec *runrecord.RunRecord) {
	for i := range rec.Scenarios {
		for j := range rec.Scenarios[i].Shards {
			sh := &rec.Scenarios[i].Shards[j]
			sh.Dir = RelPath(dir, sh.Dir)
		}
	}
}

// RelPath returns path relative to the directory dir when it lies within
// dir ("shards/shard-0") or beside it, within dir's parent
// ("../shard-0", as a Kubernetes run leaves /results/report beside
// /results/shard-0), so that what a run directory records survives a copy
// of dir, or of dir's parent, whole. Any other path, and any path either
// of which cannot be made absolute, is returned as it is.
func RelPath(dir, path string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return path
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(abs, p)
	if err != nil {
		return path
	}
	// Within dir, or one level up and down again: not dir's parent itself,
	// nor anything further up.
	first, rest, _ := strings.Cut(rel, string(filepath.Separator))
	second, _, _ := strings.Cut(rest, string(filepath.Separator))
	if first == ".." && (rest == "" || second == "..") {
		return path
	}
	return rel
}

// AppendMarkdown appends WriteMarkdown's summary of s to the file at path,
// creating it if need be: a CI job page's step summary, such as the file
// GitHub Actions names in $GITHUB_STEP_SUMMARY. Errors are those of opening
// and writing the file.
func AppendMarkdown(path string, s *checker.Summary) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	if err := WriteMarkdown(f, s); err != nil {
		f.Close()
		return fmt.Errorf("step summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	return nil
}

// writeFile creates the file at path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readAll feeds every record of src to d.
func readAll(src *history.Reader, d *digest) error {
	var rec history.Record
	for {
		err := src.Read(&rec)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		d.add(&rec)
	}
}

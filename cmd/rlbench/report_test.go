package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// savedRun is the synthetic run the reports package's golden test ships.
const savedRun = "../../reports/testdata/run"

func TestReportCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     func(dir string) []string
		wantErr  func(error) bool
		wantFile func(dir string) string // the report written, "" for none
		stdout   string
	}{
		{
			name:     "default output",
			args:     func(dir string) []string { return []string{dir} },
			wantFile: func(dir string) string { return filepath.Join(dir, "report.html") },
			stdout:   "wrote ",
		},
		{
			name:     "--out file",
			args:     func(dir string) []string { return []string{"--out", filepath.Join(dir, "elsewhere.html"), dir} },
			wantFile: func(dir string) string { return filepath.Join(dir, "elsewhere.html") },
			stdout:   "elsewhere.html",
		},
		{
			name:     "--out after DIR",
			args:     func(dir string) []string { return []string{dir, "--out", filepath.Join(dir, "after.html")} },
			wantFile: func(dir string) string { return filepath.Join(dir, "after.html") },
			stdout:   "after.html",
		},
		{
			name:   "--out -",
			args:   func(dir string) []string { return []string{"--out", "-", dir} },
			stdout: "<!DOCTYPE html>",
		},
		{
			name:    "no directory",
			args:    func(string) []string { return nil },
			wantErr: isUsage,
		},
		{
			name:    "two directories",
			args:    func(dir string) []string { return []string{dir, dir} },
			wantErr: isUsage,
		},
		{
			name:    "a file, not a directory",
			args:    func(dir string) []string { return []string{filepath.Join(dir, "summary.json")} },
			wantErr: isUsage,
		},
		{
			name:    "missing directory",
			args:    func(dir string) []string { return []string{filepath.Join(dir, "nope")} },
			wantErr: func(err error) bool { return errors.Is(err, os.ErrNotExist) && !isUsage(err) },
		},
		{
			name:    "help",
			args:    func(string) []string { return []string{"-h"} },
			wantErr: func(err error) bool { return errors.Is(err, flag.ErrHelp) },
			stdout:  "Usage: rlbench report",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(savedRun)); err != nil {
				t.Fatal(err)
			}
			var stdout bytes.Buffer
			err := (&reportCommand{stdout: &stdout}).Run(context.Background(), tt.args(dir))
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Run: %v", err)
			case tt.wantErr != nil && (err == nil || !tt.wantErr(err)):
				t.Fatalf("Run error = %v, not the one wanted", err)
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout = %.200q, want it to contain %q", stdout.String(), tt.stdout)
			}
			if tt.wantFile != nil {
				page, err := os.ReadFile(tt.wantFile(dir))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte("<svg")) {
					t.Errorf("%s is not a report with charts: %.100q", tt.wantFile(dir), page)
				}
			}
		})
	}
}

func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue)
}

// TestReportExitCodes runs the command through main's dispatch.
func TestReportExitCodes(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(savedRun)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"rendered", []string{"report", dir}, exitOK},
		{"usage", []string{"report"}, exitInvalid},
		{"no summary", []string{"report", t.TempDir()}, exitInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := run(context.Background(), tt.args, &stderr); got != tt.want {
				t.Errorf("exit code = %d, want %d; stderr: %s", got, tt.want, stderr.String())
			}
		})
	}
}

// TestReportUnfinishedRun holds `rlbench report` on a directory without a
// summary.json to a usage error that says what the run left and gives the
// command that checks it.
func TestReportUnfinishedRun(t *testing.T) {
	tests := []struct {
		name   string
		remove []string // from the saved run; nil: an empty directory
		want   []string // in the error, DIR for the directory
	}{
		{"checks interrupted", []string{"summary.json"},
			[]string{"DIR has no summary.json: the run was interrupted", "rlbench check --summary DIR/summary.json DIR\n", "rlbench report DIR"}},
		{"traffic interrupted", []string{"summary.json", "run.json"},
			[]string{"no summary.json and no run.json: the run was interrupted", "rlbench check DIR/private-buckets/history.jsonl.gz\n  rlbench check DIR/shared-gcra/history.jsonl.gz"}},
		{"no run", nil, []string{"DIR holds no run", "--out directory of 'rlbench run'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.remove != nil {
				if err := os.CopyFS(dir, os.DirFS(savedRun)); err != nil {
					t.Fatal(err)
				}
				for _, f := range tt.remove {
					if err := os.Remove(filepath.Join(dir, f)); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := (&reportCommand{stdout: io.Discard}).Run(context.Background(), []string{dir})
			if !isUsage(err) {
				t.Fatalf("Run error = %v, want a usage error", err)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "no such file") {
				t.Errorf("error %q is the bare open error", err)
			}
		})
	}
}

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
)

// checkNames returns the value of every string constant named Check* in
// package harness/checker: the name of every check a report can carry.
func checkNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../harness/checker/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Check") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, v)
				}
			}
		}
	}
	return names
}

// TestREADMECheckTable holds README.md's table of checks to the checker:
// every check a report can carry has a row that says what fails it and what
// it can not prove, and the table names no check the checker lacks.
func TestREADMECheckTable(t *testing.T) {
	md, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	in := false
	for _, line := range strings.Split(string(md), "\n") {
		switch {
		case strings.HasPrefix(line, "| check | what fails it | what it can not prove |"):
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			rows[strings.Trim(strings.TrimSpace(cells[0]), "`")] = cells[1:]
		case in:
			in = false
		}
	}
	if len(rows) == 0 {
		t.Fatal("README.md has no table headed | check | what fails it | what it can not prove |")
	}
	known := map[string]bool{}
	for _, name := range checkNames(t) {
		known[name] = true
		if name == "run" { // a scenario that could not run: not a check of the history
			continue
		}
		cells, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("README.md's table of checks has no row for %q", name)
		case len(cells) != 2 || strings.TrimSpace(cells[0]) == "" || strings.TrimSpace(cells[1]) == "":
			t.Errorf("README.md's row for %q: want what fails it and what it can not prove, got %q", name, cells)
		}
	}
	for name := range rows {
		if !known[name] {
			t.Errorf("README.md's table of checks names %q, which the checker does not have", name)
		}
	}
	if len(known) < 18 {
		t.Errorf("found %d check names in harness/checker; the scan lost some", len(known))
	}
	// The budget and false-rejections rows state the rule on observed
	// store stalls: a pass must hold with the stalls excused and with the
	// store taken as healthy, and the share of the run the stalls excuse
	// decides nothing (no bound on it remains to state).
	for _, name := range []string{checker.CheckBudget, checker.CheckFalseRejections} {
		row := strings.Join(rows[name], " | ")
		for _, want := range []string{
			"with the store taken as healthy",
			"**unknown**",
			"share of the run the stalls excuse",
		} {
			if !strings.Contains(row, want) {
				t.Errorf("README.md's %s row does not state the rule on observed stalls: it lacks %q", name, want)
			}
		}
		for _, gone := range []string{"more than half of them", "twice its capacity", "10 %"} {
			if strings.Contains(row, gone) {
				t.Errorf("README.md's %s row still states a bound on what observed stalls may excuse (%q); the checker has none", name, gone)
			}
		}
	}
}

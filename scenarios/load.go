package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"github.com/rlbench/rlbench/scenarios/nearest"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// shipped holds the scenario files that ship with rlbench.
//
//go:embed *.yaml
var shipped embed.FS

// ErrNotFound is returned by Lookup and Load for a name that is neither a
// file, a directory nor a shipped scenario.
var ErrNotFound = errors.New("scenario not found")

// Info names a shipped scenario and says what it proves.
type Info struct {
	Name        string
	Description string
}

// List returns the shipped scenarios sorted by name. A shipped file that
// fails to parse is an error; the tests make sure none does.
func List() ([]Info, error) {
	all, err := shippedScenarios()
	if err != nil {
		return nil, err
	}
	out := make([]Info, len(all))
	for i, s := range all {
		out[i] = Info{Name: s.Name, Description: s.Description}
	}
	return out, nil
}

func shippedScenarios() ([]*Scenario, error) {
	entries, err := fs.ReadDir(shipped, ".")
	if err != nil {
		return nil, fmt.Errorf("list shipped scenarios: %w", err)
	}
	var out []*Scenario
	for _, e := range entries {
		s, err := parseShipped(e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func parseShipped(file string) (*Scenario, error) {
	data, err := shipped.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read shipped scenario: %w", err)
	}
	return Parse("embedded:"+file, data)
}

// Lookup returns the shipped scenario called name (its name key, which is
// also its file name without .yaml), or an error wrapping ErrNotFound that
// lists the names available.
func Lookup(name string) (*Scenario, error) {
	all, err := shippedScenarios()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, s := range all {
		if s.Name == name {
			return s, nil
		}
		names[i] = s.Name
	}
	if near := nearest.Word(name, names); near != "" {
		return nil, fmt.Errorf("%w: %q; did you mean %q?", ErrNotFound, name, near)
	}
	return nil, fmt.Errorf("%w: %q; shipped scenarios are %s", ErrNotFound, name, strings.Join(names, ", "))
}

// LoadFile reads and parses one scenario file. Errors are *ScenarioError
// values, or the read error wrapped.
func LoadFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	return Parse(path, data)
}

// Load resolves arg as a scenario file, a directory (every *.yaml and *.yml
// file directly in it, sorted by name) or the name of a shipped scenario, in
// that order, and parses what it finds. It returns the first error, with the
// file it concerns; scenario names must be unique across the result.
func Load(args ...string) ([]*Scenario, error) {
	var out []*Scenario
	for _, arg := range args {
		got, err := load(arg)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	seen := map[string]string{}
	for _, s := range out {
		if prev, ok := seen[s.Name]; ok {
			return nil, &ScenarioError{File: s.Source, Field: "name", Err: fmt.Errorf("%q is also the name of %s; names must be unique in one run", s.Name, prev)}
		}
		seen[s.Name] = s.Source
	}
	return out, nil
}

func load(arg string) ([]*Scenario, error) {
	info, err := os.Stat(arg)
	switch {
	case err == nil && info.IsDir():
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, fmt.Errorf("load scenarios: %w", err)
		}
		var out []*Scenario
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
				continue
			}
			s, err := LoadFile(filepath.Join(arg, e.Name()))
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("load scenarios: %s holds no .yaml file", arg)
		}
		return out, nil
	case err == nil:
		s, err := LoadFile(arg)
		if err != nil {
			return nil, err
		}
		return []*Scenario{s}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	if strings.ContainsAny(arg, `/\`) || filepath.Ext(arg) != "" {
		return nil, fmt.Errorf("load scenario: %w: no file %s", ErrNotFound, arg)
	}
	s, err := Lookup(arg)
	if err != nil {
		return nil, err
	}
	return []*Scenario{s}, nil
}

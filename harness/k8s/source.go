package k8s

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rlbench/rlbench/scenarios"
)

// Source is the scenario a sharded run ships to its pods: the parsed
// scenario and its file as it will lie in ScenarioDir.
type Source struct {
	// Scenario is the file parsed with scenarios.ParseUnexpanded: its
	// header values hold their ${NAME} references, which the pods fill
	// from the run's Secret.
	Scenario *scenarios.Scenario
	// File is the scenario's file name in ScenarioDir, the scenario's
	// name with .yaml, and Data the file's bytes as written.
	File string
	Data []byte
	// Dir is the directory on this machine the files the scenario names
	// (body_file, keys_file) are read from; empty for a shipped scenario,
	// which names none.
	Dir string
}

// LoadSource resolves arg as scenarios.Load does for one scenario, a file
// or else the name of a shipped scenario, and parses it with
// scenarios.ParseUnexpanded, so that no variable its headers take need be
// set here. Errors: a directory (a sharded run is one scenario), a path
// that is not a file (wrapping scenarios.ErrNotFound), a read error, and
// the parse's *scenarios.ScenarioError.
func LoadSource(arg string) (*Source, error) {
	info, err := os.Stat(arg)
	switch {
	case err == nil && info.IsDir():
		return nil, fmt.Errorf("load scenario: %s is a directory; a sharded run is one scenario, so name its file", arg)
	case err == nil:
		data, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("load scenario: %w", err)
		}
		sc, err := scenarios.ParseUnexpanded(arg, data)
		if err != nil {
			return nil, err
		}
		return &Source{Scenario: sc, File: sc.Name + ".yaml", Data: data, Dir: filepath.Dir(arg)}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("load scenario: %w", err)
	case strings.ContainsAny(arg, `/\`) || filepath.Ext(arg) != "":
		return nil, fmt.Errorf("load scenario: %w: no file %s", scenarios.ErrNotFound, arg)
	}
	source, data, err := scenarios.ReadShipped(arg)
	if err != nil {
		return nil, err
	}
	sc, err := scenarios.ParseUnexpanded(source, data)
	if err != nil {
		return nil, err
	}
	return &Source{Scenario: sc, File: sc.Name + ".yaml", Data: data}, nil
}

// mount is a file the scenario names, placed at Path (relative to
// ScenarioDir, as the scenario names it) from Key of the run's ConfigMap,
// or of the user's Secret when it holds keys.
type mount struct {
	// Field is where the scenario names the file, as in
	// "target.routes[0].body_file"; Name is the name it gives.
	Field, Name string
	Path, Key   string
	// Data is a body file's bytes; nil for a keys file, which the
	// manifests never hold.
	Data []byte
	// Secret marks a keys file: API keys or tokens, which come from the
	// user's Secret.
	Secret bool
}

// mounts returns the files src's scenario names, each once, in the order
// the scenario names them: body files from the ConfigMap, keys files from
// the Secret. Keys are the paths with every character a key cannot hold
// (a ConfigMap's or Secret's: letters, digits, '-', '_', '.') replaced by
// '-', made unique with a "-2", "-3" suffix; the scenario's own file holds
// File. Errors: a path a volume cannot place beside the scenario (absolute,
// or above its directory), or one the scenario file itself takes.
func (src *Source) mounts() ([]mount, error) {
	sc := src.Scenario
	var named []mount
	for i, rt := range sc.Target.Routes {
		if rt.BodyFile != "" {
			named = append(named, mount{Field: fmt.Sprintf("target.routes[%d].body_file", i), Name: rt.BodyFile, Data: rt.Body})
		}
	}
	if sc.Identities.KeysFile != "" {
		named = append(named, mount{Field: "identities.keys_file", Name: sc.Identities.KeysFile, Secret: true})
	}
	for i, g := range sc.Identities.Groups {
		if g.KeysFile != "" {
			named = append(named, mount{Field: fmt.Sprintf("identities.groups[%d].keys_file", i), Name: g.KeysFile, Secret: true})
		}
	}
	keys := map[string]bool{src.File: true}
	var out []mount
	for _, m := range named {
		p := path.Clean(filepath.ToSlash(m.Name))
		switch {
		case filepath.IsAbs(m.Name) || path.IsAbs(p):
			return nil, fmt.Errorf("%s: %s: %s is an absolute path, which a pod does not have; "+
				"give the file's path relative to the scenario file", src.Scenario.Source, m.Field, m.Name)
		case p == ".." || strings.HasPrefix(p, "../"):
			return nil, fmt.Errorf("%s: %s: %s lies outside the scenario file's directory, where a pod finds only what is mounted "+
				"beside the scenario; move the file into that directory or below it", src.Scenario.Source, m.Field, m.Name)
		case p == src.File:
			return nil, fmt.Errorf("%s: %s: %s is the name the scenario file itself takes in the pod; rename the file", src.Scenario.Source, m.Field, m.Name)
		}
		if i := slices.IndexFunc(out, func(o mount) bool { return o.Path == p }); i >= 0 {
			if out[i].Secret != m.Secret {
				return nil, fmt.Errorf("%s: %s: %s is also %s; a file holds either keys or a body", src.Scenario.Source, m.Field, m.Name, out[i].Field)
			}
			continue
		}
		m.Path = p
		m.Key = uniqueKey(configMapKey(p), keys)
		out = append(out, m)
	}
	return out, nil
}

// configMapKey returns p with every character a ConfigMap or Secret key
// cannot hold replaced by '-'.
func configMapKey(p string) string {
	k := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, p)
	if len(validation.IsConfigMapKey(k)) > 0 { // "..x" or too long
		k = "file-" + strings.TrimLeft(k, ".")
		k = k[:min(len(k), validation.DNS1123SubdomainMaxLength)]
	}
	return k
}

// uniqueKey returns k, or k with the first of "-2", "-3", ... that taken
// does not hold, and marks it taken.
func uniqueKey(k string, taken map[string]bool) string {
	out := k
	for n := 2; taken[out]; n++ {
		out = k + "-" + strconv.Itoa(n)
	}
	taken[out] = true
	return out
}

// envNames returns the environment variables the scenario's headers take,
// each once, sorted.
func envNames(sc *scenarios.Scenario) []string {
	var names []string
	for _, rt := range sc.Target.Routes {
		for _, h := range rt.Headers {
			names = append(names, h.Env...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

package scenarios

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Redacted is what a Secret shows wherever it is printed or encoded.
const Redacted = "[redacted]"

// Secret is a value rlbench sends but never records: an API key from a
// keys file, or a header value taken from the environment. It prints as
// Redacted whatever the verb (%v, %+v, %#v, %s), encodes as Redacted in
// JSON, YAML and text, and Reveal returns it. The zero value is empty.
type Secret struct{ v string }

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{v} }

// Reveal returns the secret value, for the request that carries it.
func (s Secret) Reveal() string { return s.v }

// String returns Redacted.
func (s Secret) String() string { return Redacted }

// GoString returns Redacted.
func (s Secret) GoString() string { return Redacted }

// Format writes Redacted for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, Redacted) }

// MarshalText returns Redacted: no encoding of a scenario holds a secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// Header is a static request header of a route.
type Header struct {
	// Name is the header's canonical name ("Authorization").
	Name string
	// Template is the value as the file writes it, every ${VAR} reference
	// unexpanded: safe to show.
	Template string
	// Value is the value sent: Template with each ${VAR} replaced by the
	// variable's value when the scenario was parsed.
	Value Secret
	// Env names the environment variables Value took, in order. A header
	// with any is secret: its value is never recorded.
	Env []string
}

// FromEnv reports whether the header's value took an environment
// variable, so that it must never be recorded.
func (h Header) FromEnv() bool { return len(h.Env) > 0 }

// envRef matches a ${NAME} reference; NAME is a shell variable name.
var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expandEnv replaces every ${NAME} in s by the value lookup gives NAME and
// returns the names it replaced. A $ not followed by { is kept as it is.
// Errors: a reference that is not closed or does not hold a variable
// name, and a variable that is unset or empty, each named.
func expandEnv(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var names []string
	var err error
	out := envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if err != nil {
			return ""
		}
		if !envName.MatchString(name) {
			err = fmt.Errorf("${%s} is not a variable reference; write ${NAME} with NAME of letters, digits and _", name)
			return ""
		}
		v, ok := lookup(name)
		if !ok || v == "" {
			err = fmt.Errorf("environment variable %s is not set (or is empty); export it before running the scenario", name)
			return ""
		}
		names = append(names, name)
		return v
	})
	if err != nil {
		return "", nil, err
	}
	if rest := envRef.ReplaceAllString(s, ""); strings.Contains(rest, "${") {
		return "", nil, fmt.Errorf("a ${ is not closed; write ${NAME}")
	}
	return out, names, nil
}

package scenarios

import "strings"

// ParseUnexpanded parses and validates one scenario as Parse does, but
// reads no environment variable: a header value keeps its ${NAME}
// references as written (its Value reveals its Template) and Header.Env
// still names them, set or not. It is for a caller that inspects a
// scenario another process will run with an environment of its own, as
// `rlbench k8s` does for the pods of a sharded run. Errors are
// *ScenarioError values.
func ParseUnexpanded(file string, data []byte) (*Scenario, error) {
	return parse(file, data, func(name string) (string, bool) { return "${" + name + "}", true })
}

// ReadShipped returns the file of the shipped scenario called name and the
// Source its Scenario carries ("embedded:NAME.yaml"). A name no shipped
// scenario has is an error wrapping ErrNotFound, as Lookup's is.
func ReadShipped(name string) (source string, data []byte, err error) {
	s, err := Lookup(name)
	if err != nil {
		return "", nil, err
	}
	data, err = shipped.ReadFile(strings.TrimPrefix(s.Source, "embedded:"))
	if err != nil {
		return "", nil, err
	}
	return s.Source, data, nil
}

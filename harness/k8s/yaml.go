package k8s

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// noteWidth is the column the notes wrap at, "# " included.
const noteWidth = 80

// objects returns the manifests' objects in the order they are written:
// the ConfigMap, the claim (when the manifests make one), the shards' Job
// and the check's Job.
func (m *Manifests) objects() []any {
	out := []any{m.ConfigMap}
	if m.Claim != nil {
		out = append(out, m.Claim)
	}
	return append(out, m.Shards, m.Check)
}

// WriteYAML writes the notes as comment lines, then each object as a YAML
// document, the documents separated by "---" lines, as `kubectl apply -f`
// reads them. An object's empty status is left out. Errors are w's, or an
// object's that does not encode (none of New's).
func (m *Manifests) WriteYAML(w io.Writer) error {
	var b strings.Builder
	for _, n := range m.Notes {
		b.WriteString(strings.TrimRight("# "+n, " ") + "\n")
	}
	for i, obj := range m.objects() {
		if i > 0 {
			b.WriteString("---\n")
		}
		doc, err := marshal(obj)
		if err != nil {
			return err
		}
		b.Write(doc)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// marshal encodes obj as YAML without its status, which a manifest leaves
// to the cluster ("status: {}" otherwise, the zero status encoded).
func marshal(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	delete(fields, "status")
	out, err := yaml.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	return out, nil
}

// wrapComment fills s's words into lines of at most width columns once
// "# " is put before each; a longer word has a line of its own.
func wrapComment(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w)+2 > width:
			out = append(out, line)
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

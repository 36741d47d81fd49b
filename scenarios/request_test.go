package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// writeScenario writes src and the given files into a new directory and
// returns the scenario file's path.
func writeScenario(t *testing.T, src string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const requestScenario = `name: requests
description: every request field of a route
target:
  external: [http://127.0.0.1:9]
  routes:
    - path: /v1/orders
      method: post
      query: "?tenant=acme&page=2"
      headers:
        Authorization: "Bearer ${RLBENCH_TEST_TOKEN}"
        content-type: application/json
        X-Trace: "$literal ${RLBENCH_TEST_TOKEN}-${RLBENCH_TEST_REGION}"
      body_file: bodies/order.json
      policies: ["gcra:10/1s,burst=10"]
    - path: /v1/ping
      body: "ping"
      policies: ["gcra:10/1s,burst=10"]
identities:
  carry: query
  name: access_token
  keys_file: keys/real.txt
traffic:
  - {kind: burst, requests: 4}
  - {kind: retry_after_probe, requests: 10}
`

func TestParseRequestFields(t *testing.T) {
	const token = "tok-4b1d7e0c-secret"
	t.Setenv("RLBENCH_TEST_TOKEN", token)
	t.Setenv("RLBENCH_TEST_REGION", "eu")
	path := writeScenario(t, requestScenario, map[string]string{
		"bodies/order.json": `{"sku": "A-1", "qty": 2}`,
		"keys/real.txt":     "# production keys\nsk_live_one\n\n  sk_live_two  \nsk_live_three\n# the end\n",
	})
	s, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rt := s.Target.Routes[0]
	var headers []string
	for _, h := range rt.Headers {
		headers = append(headers, fmt.Sprintf("%s=%s env=%v", h.Name, h.Value.Reveal(), h.Env))
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"Method", rt.Method, "POST"},
		{"Query", rt.Query, "tenant=acme&page=2"},
		{"Body", string(rt.Body), `{"sku": "A-1", "qty": 2}`},
		{"BodyFile", rt.BodyFile, "bodies/order.json"},
		{"Headers", strings.Join(headers, "; "),
			"Authorization=Bearer " + token + " env=[RLBENCH_TEST_TOKEN]; Content-Type=application/json env=[]; " +
				"X-Trace=$literal " + token + "-eu env=[RLBENCH_TEST_TOKEN RLBENCH_TEST_REGION]"},
		{"Headers[0].Template", rt.Headers[0].Template, "Bearer ${RLBENCH_TEST_TOKEN}"},
		{"Routes[1].Body", string(s.Target.Routes[1].Body), "ping"},
		{"Identities.Carry", s.Identities.Carry, Query},
		{"Identities.Name", s.Identities.Name, "access_token"},
		{"Identities.Header", s.Identities.Header, ""},
		{"Identities.Keys", len(s.Identities.Keys), 3},
		{"Identities.Keys[1]", s.Identities.Keys[1].Reveal(), "sk_live_two"},
		{"Identities.Count (the last key is the probe's)", s.Identities.Count, 2},
		{"Identities.Fixed", s.Identities.Fixed, true},
		{"Identities.Fresh", s.Identities.Fresh(), false},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// No rendering of the scenario shows a secret.
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	ym, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", s), "%+v": fmt.Sprintf("%+v", s), "%#v": fmt.Sprintf("%#v", s),
		"json": string(js), "yaml": string(ym),
	} {
		for _, secret := range []string{token, "sk_live_one", "sk_live_two", "sk_live_three"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s of the scenario shows the secret %q", name, secret)
			}
		}
	}
}

func TestParseIdentityCarries(t *testing.T) {
	tests := []struct {
		name     string
		target   string
		ids      string
		wantCarr Carry
		wantHdr  string
		wantName string
		wantIP   int
		wantHops int
	}{
		{"default", "instances: 1", "count: 2", APIKey, "X-API-Key", "", 0, 0},
		{"bearer on the sample API", "instances: 1", "carry: bearer", Bearer, "Authorization", "", 0, 0},
		{"cookie", "external: [http://127.0.0.1:9]", "carry: cookie", Cookie, "Cookie", "api_key", 0, 0},
		{"query named", "external: [http://127.0.0.1:9]", "{carry: query, name: token}", Query, "", "token", 0, 0},
		{"client ip", "instances: 1", "carry: client_ip", ClientIP, "X-Forwarded-For", "", 4, 1},
		{"client ip v6 /64 behind 2 proxies", "instances: 1", "{carry: client_ip, ip_version: 6, prefix: 64, trusted_hops: 2}", ClientIP, "X-Forwarded-For", "", 6, 2},
		{"client ip in X-Real-IP", "external: [http://127.0.0.1:9]", "{carry: client_ip, header: X-Real-IP}", ClientIP, "X-Real-IP", "", 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fmt.Sprintf("name: x\ndescription: carries\ntarget:\n  %s\n  routes:\n    - {path: /a, policies: [\"gcra:10/1s,burst=10\"]}\nidentities: %s\ntraffic:\n  - {kind: burst, requests: 2}\n", tt.target, tt.ids)
			if !strings.HasPrefix(tt.ids, "{") {
				src = strings.Replace(src, "identities: "+tt.ids, "identities:\n  "+tt.ids, 1)
			}
			s, err := Parse("x.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			id := s.Identities
			if id.Carry != tt.wantCarr || id.Header != tt.wantHdr || id.Name != tt.wantName || id.IPVersion != tt.wantIP || id.TrustedHops != tt.wantHops {
				t.Errorf("carry, header, name, ip_version, trusted_hops = %s, %q, %q, %d, %d; want %s, %q, %q, %d, %d",
					id.Carry, id.Header, id.Name, id.IPVersion, id.TrustedHops, tt.wantCarr, tt.wantHdr, tt.wantName, tt.wantIP, tt.wantHops)
			}
			if !id.Fresh() {
				t.Errorf("generated identities are not fresh by default")
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"A": "alpha", "B_2": "beta", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want, wantErr string
		wantNames         string
	}{
		{"plain", "plain", "", ""},
		{"Bearer ${A}", "Bearer alpha", "", "A"},
		{"${A}${B_2}", "alphabeta", "", "A B_2"},
		{"$A and $ and $$", "$A and $ and $$", "", ""},
		{"${MISSING}", "", "environment variable MISSING is not set", ""},
		{"${EMPTY}", "", "environment variable EMPTY is not set (or is empty)", ""},
		{"${not a name}", "", "${not a name} is not a variable reference", ""},
		{"${A", "", "a ${ is not closed", ""},
	}
	for _, tt := range tests {
		got, names, err := expandEnv(tt.in, lookup)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("expandEnv(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("expandEnv(%q) error = %v", tt.in, err)
		case got != tt.want || strings.Join(names, " ") != tt.wantNames:
			t.Errorf("expandEnv(%q) = %q, %v; want %q, %s", tt.in, got, names, tt.want, tt.wantNames)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := NewSecret("hunter2")
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%s %v %+v %#v %q %x", s, s, s, s, s, s), s.String(), s.GoString()} {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, Redacted) {
			t.Errorf("printed %q", out)
		}
	}
	if s.Reveal() != "hunter2" {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
}

// TestFilesOfShippedScenario: an embedded scenario has no directory to
// read files from.
func TestFilesOfShippedScenario(t *testing.T) {
	src := "name: x\ndescription: files\ntarget:\n  instances: 1\n  routes:\n    - {path: /a, body_file: b.json, policies: [\"gcra:10/1s,burst=10\"]}\ntraffic:\n  - {kind: burst, requests: 2}\n"
	_, err := Parse("embedded:x.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "target.routes[0].body_file: a shipped scenario cannot read files") {
		t.Fatalf("error = %v", err)
	}
}

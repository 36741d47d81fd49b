//go:build unix

package doctor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/doctor"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// relaxed are options that make the latency check pass on a loaded test
// machine, so that each test sees only the finding it provokes.
var relaxed = doctor.Options{StoreTimeout: 10 * time.Second, Pings: 20}

// allChecks are the checks of a data node, in report order.
var allChecks = []string{"version", "role", "eviction", "scripting", "cluster", "latency", "clock"}

// startRedis starts a redis-server with extra directives for t; at cleanup
// it fails t if a key was left without a TTL, then stops the server.
func startRedis(t *testing.T, args ...string) *redistest.Server {
	t.Helper()
	srv, err := redistest.Start(context.Background(), redistest.Options{Args: args})
	if errors.Is(err, redistest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c := adminClient(srv)
		defer c.Close()
		if missing, err := redistest.KeysWithoutTTL(context.Background(), c); err != nil || len(missing) > 0 {
			t.Errorf("keys without a TTL: %v (%v)", missing, err)
		}
		if err := srv.Stop(); err != nil {
			t.Errorf("stop redis-server: %v", err)
		}
	})
	return srv
}

func adminClient(srv *redistest.Server) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
}

func diagnose(t *testing.T, url string, opts doctor.Options) *doctor.Report {
	t.Helper()
	rep, err := doctor.Diagnose(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Diagnose(%s): %v", doctor.Redact(url), err)
	}
	return rep
}

// findings returns the names of the checks that found something.
func findings(rep *doctor.Report) []string {
	var names []string
	for _, c := range rep.Checks {
		if !c.OK {
			names = append(names, c.Name)
		}
	}
	return names
}

func check(t *testing.T, rep *doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, rep.Checks)
	return doctor.Check{}
}

func TestHealthy(t *testing.T) {
	srv := startRedis(t)
	rep := diagnose(t, srv.URL(), doctor.Options{StoreTimeout: 10 * time.Second})
	if !rep.Healthy() || rep.Findings != 0 {
		t.Fatalf("findings %v in %+v, want none", findings(rep), rep.Checks)
	}
	var names []string
	for _, c := range rep.Checks {
		names = append(names, c.Name)
		if c.Finding != "" || c.Fix != "" || c.Observed == "" {
			t.Errorf("check %+v: want an observation and no finding", c)
		}
	}
	if got, want := strings.Join(names, ","), strings.Join(allChecks, ","); got != want {
		t.Fatalf("checks %s, want %s", got, want)
	}
	if rep.Mode != "standalone" || rep.Role != "master" || rep.Version == "" {
		t.Fatalf("server = %q %q %q, want a standalone master with a version", rep.Version, rep.Mode, rep.Role)
	}
	if rep.Latency == nil || rep.Latency.Samples != doctor.DefaultPings || rep.Latency.P50Micros > rep.Latency.P99Micros || rep.Latency.P99Micros > rep.Latency.MaxMicros {
		t.Fatalf("latency %+v, want %d ordered samples", rep.Latency, doctor.DefaultPings)
	}
	if got, want := rep.Latency.LimitMicros, int64(5e6); got != want {
		t.Fatalf("latency limit = %d µs, want %d (half the store timeout)", got, want)
	}
	// Same host, same clock: the offset is within its uncertainty (plus
	// a millisecond for a machine that schedules the test late).
	if c := rep.Clock; c == nil || c.UncertaintyMicros < 1 || abs(c.OffsetMicros) > c.UncertaintyMicros+1000 {
		t.Fatalf("clock %+v, want an offset within its uncertainty", rep.Clock)
	}
	if c := check(t, rep, "scripting"); !strings.Contains(c.Observed, "FUNCTION LOAD and FCALL allowed: the reference limiter runs its programs as functions") {
		t.Errorf("scripting observed %q: want FUNCTION LOAD and FCALL allowed", c.Observed)
	}
	// The probe keys and the probe library are gone.
	c := adminClient(srv)
	defer c.Close()
	if n, err := c.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE = %d, %v after the doctor; want 0: the probe keys are deleted", n, err)
	}
	if libs, err := c.FunctionList(context.Background(), redis.FunctionListQuery{}).Result(); err != nil || len(libs) != 0 {
		t.Fatalf("FUNCTION LIST = %v, %v after the doctor; want none: the probe library is deleted", libs, err)
	}
}

// TestFunctionsRefused: a user who may not load libraries or not call
// them is no finding (the reference limiter runs its programs as scripts
// then), but the scripting check says so; one who may not delete them
// runs functions, and is told the probe library stays and how to remove it.
func TestFunctionsRefused(t *testing.T) {
	srv := startRedis(t)
	admin := adminClient(srv)
	defer admin.Close()
	ctx := context.Background()
	cases := []struct {
		user, acl string
		want      []string
		left      bool // the probe library stays
	}{
		{"nofunction", "-function", []string{"FUNCTION LOAD: forbidden by this user's ACL", "runs its programs as scripts (EVALSHA)"}, false},
		{"nofcall", "-fcall", []string{"FCALL: forbidden by this user's ACL", "runs its programs as scripts (EVALSHA)"}, false},
		{"nodelete", "-function|delete", []string{"FUNCTION LOAD and FCALL allowed: the reference limiter runs its programs as functions",
			"the probe library rlbench_doctor stays loaded (FUNCTION DELETE: forbidden by this user's ACL", "run FUNCTION DELETE rlbench_doctor"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			if err := admin.Do(ctx, "ACL", "SETUSER", tc.user, "on", ">pw", "~*", "+@all", tc.acl).Err(); err != nil {
				t.Fatal(err)
			}
			rep := diagnose(t, fmt.Sprintf("redis://%s:pw@%s", tc.user, srv.Addr()), doctor.Options{StoreTimeout: 10 * time.Second})
			if got := findings(rep); len(got) != 0 {
				t.Fatalf("findings %v, want none: the reference limiter runs either way", got)
			}
			c := check(t, rep, "scripting")
			for _, w := range tc.want {
				if !strings.Contains(c.Observed, w) {
					t.Errorf("scripting observed %q: want it to say %q", c.Observed, w)
				}
			}
			libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if (len(libs) == 1) != tc.left || len(libs) > 1 {
				t.Errorf("libraries after the doctor %v, want the probe library left: %v", libs, tc.left)
			}
			if err := admin.FunctionFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestEviction is field case C16 as the doctor sees it: a policy that can
// evict limiter keys while maxmemory is set is a finding.
func TestEviction(t *testing.T) {
	cases := []struct {
		args     []string
		finding  bool
		observed string
	}{
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"}, true, "maxmemory 10mb, maxmemory-policy allkeys-lru"},
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "allkeys-random"}, true, "maxmemory 10mb, maxmemory-policy allkeys-random"},
		// Every limiter key has a TTL: volatile-* can evict them all.
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "volatile-lru"}, true, "maxmemory 10mb, maxmemory-policy volatile-lru"},
		{[]string{"--maxmemory", "1gb", "--maxmemory-policy", "volatile-ttl"}, true, "maxmemory 1gb, maxmemory-policy volatile-ttl"},
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "noeviction"}, false, "maxmemory 10mb, maxmemory-policy noeviction"},
		// No maxmemory: the policy never acts.
		{[]string{"--maxmemory-policy", "allkeys-lru"}, false, "maxmemory 0, maxmemory-policy allkeys-lru (no limit: nothing is evicted)"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			srv := startRedis(t, tc.args...)
			rep := diagnose(t, srv.URL(), relaxed)
			c := check(t, rep, "eviction")
			if got, want := c.Observed, tc.observed; got != want {
				t.Fatalf("Observed = %q, want %q", got, want)
			}
			want := []string(nil)
			if tc.finding {
				want = []string{"eviction"}
				if !strings.Contains(c.Finding, "over-admits") || !strings.Contains(c.Fix, "noeviction") {
					t.Fatalf("finding %q, fix %q: want the over-admission and noeviction", c.Finding, c.Fix)
				}
			}
			if got := findings(rep); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("findings %v, want %v", got, want)
			}
		})
	}
}

// TestACL tries users whose ACL forbids one thing the limiter needs; the
// finding names it, and no message ever holds the user's password.
func TestACL(t *testing.T) {
	srv := startRedis(t)
	admin := adminClient(srv)
	defer admin.Close()
	const password = "s3cret-Pa55word"
	cases := []struct {
		user     string
		rules    []any
		findings string   // the checks that find something
		want     []string // substrings of the scripting check's observation
	}{
		{"noevalsha", []any{"-evalsha"}, "[scripting]", []string{"EVALSHA: forbidden by this user's ACL"}},
		{"noeval", []any{"-eval"}, "[scripting]", []string{"EVAL: forbidden by this user's ACL", "the key probe was skipped"}},
		{"noscriptload", []any{"-script|load"}, "[scripting]", []string{"SCRIPT LOAD: forbidden by this user's ACL", "TIME, GET, SET"}},
		// The clock check reads TIME too.
		{"notime", []any{"-time"}, "[scripting clock]", []string{"TIME: forbidden by this user's ACL",
			"a script's commands on rl:{rlbench-doctor}:probe: forbidden by this user's ACL (TIME in the script"}},
		{"noscripting", []any{"-@scripting"}, "[scripting]", []string{"SCRIPT LOAD: forbidden", "EVALSHA: forbidden", "EVAL: forbidden", "FUNCTION LOAD: forbidden"}},
		{"otherkeys", []any{"resetkeys", "~cache:*"}, "[scripting]", []string{"a script's commands on rl:{rlbench-doctor}:probe: forbidden by this user's ACL"}},
		{"nolists", []any{"-@list"}, "[scripting]", []string{"a script's commands on rl:{rlbench-doctor}:probe: forbidden by this user's ACL (RPUSH in the script"}},
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			args := append([]any{"ACL", "SETUSER", tc.user, "reset", "on", ">" + password, "~*", "+@all"}, tc.rules...)
			if err := admin.Do(context.Background(), args...).Err(); err != nil {
				t.Fatal(err)
			}
			url := fmt.Sprintf("redis://%s:%s@%s", tc.user, password, srv.Addr())
			rep := diagnose(t, url, relaxed)
			if got := findings(rep); fmt.Sprint(got) != tc.findings {
				t.Fatalf("findings %v, want %s: %+v", got, tc.findings, rep.Checks)
			}
			c := check(t, rep, "scripting")
			for _, w := range tc.want {
				if !strings.Contains(c.Observed, w) {
					t.Errorf("observed %q: want it to say %q", c.Observed, w)
				}
			}
			if !strings.Contains(c.Fix, "ACL SETUSER") {
				t.Errorf("fix %q: want the ACL rule", c.Fix)
			}
			// Only SCRIPT LOAD refused: the reference limiter still runs.
			if got, want := strings.Contains(c.Finding, "the reference limiter can"), tc.user == "noscriptload"; got != want {
				t.Errorf("finding %q: says the reference limiter can run: %v, want %v", c.Finding, got, want)
			}
			var text, js bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			for _, out := range []string{text.String(), js.String()} {
				if strings.Contains(out, password) {
					t.Fatalf("the report holds the password:\n%s", out)
				}
			}
			if want := fmt.Sprintf("redis://%s:xxxxx@%s", tc.user, srv.Addr()); rep.URL != want {
				t.Fatalf("URL = %q, want %q", rep.URL, want)
			}
		})
	}
}

// TestScriptingDisabled: EVAL and EVALSHA renamed away.
func TestScriptingDisabled(t *testing.T) {
	srv := startRedis(t, "--rename-command", "EVAL", "", "--rename-command", "EVALSHA", "")
	rep := diagnose(t, srv.URL(), relaxed)
	if got := findings(rep); fmt.Sprint(got) != "[scripting]" {
		t.Fatalf("findings %v, want [scripting]: %+v", got, rep.Checks)
	}
	c := check(t, rep, "scripting")
	for _, w := range []string{"EVALSHA: disabled, renamed or removed", "EVAL: disabled, renamed or removed"} {
		if !strings.Contains(c.Finding, w) {
			t.Errorf("finding %q: want it to say %q", c.Finding, w)
		}
	}
}

// TestReplica: a replica refuses the limiter's writes.
func TestReplica(t *testing.T) {
	master := startRedis(t)
	replica := startRedis(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.Port()))
	rep := diagnose(t, replica.URL(), relaxed)
	if got := findings(rep); fmt.Sprint(got) != "[role scripting]" {
		t.Fatalf("findings %v, want [role scripting]: %+v", got, rep.Checks)
	}
	if c := check(t, rep, "role"); !strings.Contains(c.Fix, master.Addr()) || rep.Role != "slave" {
		t.Fatalf("role check %+v (role %q): want a replica, and its master %s in the fix", c, rep.Role, master.Addr())
	}
	if c := check(t, rep, "scripting"); !strings.Contains(c.Finding, "refused by a read-only replica") {
		t.Fatalf("scripting finding %q: want the replica's READONLY", c.Finding)
	}
}

// TestCluster: on a cluster node the doctor checks that the reference's
// keys of one identity share one slot.
func TestCluster(t *testing.T) {
	cl := redistest.StartClusterForTest(t, 3)
	rep := diagnose(t, "redis://"+cl.Addrs()[1], relaxed)
	if !rep.Healthy() || rep.Mode != "cluster" {
		t.Fatalf("mode %q, findings %v: want a healthy cluster node: %+v", rep.Mode, findings(rep), rep.Checks)
	}
	c := check(t, rep, "cluster")
	if !strings.Contains(c.Observed, "cluster_state ok; rl:{") || !strings.Contains(c.Observed, "share a slot") {
		t.Fatalf("Observed = %q: want the sample keys and their shared slot", c.Observed)
	}
	var a, b int
	if _, err := fmt.Sscanf(c.Observed[strings.Index(c.Observed, "in slots "):], "in slots %d and %d", &a, &b); err != nil || a != b {
		t.Fatalf("Observed = %q: want two equal slots (%v)", c.Observed, err)
	}
}

// TestLatency: a store timeout no round trip can meet is a finding.
func TestLatency(t *testing.T) {
	srv := startRedis(t)
	rep := diagnose(t, srv.URL(), doctor.Options{StoreTimeout: time.Microsecond, Pings: 50})
	if got := findings(rep); fmt.Sprint(got) != "[latency]" {
		t.Fatalf("findings %v, want [latency]: %+v", got, rep.Checks)
	}
	if rep.Latency.Samples != 50 || rep.Latency.LimitMicros != 0 {
		t.Fatalf("latency %+v, want 50 samples against a limit of 0 µs", rep.Latency)
	}
	if c := check(t, rep, "latency"); !strings.Contains(c.Finding, "exceeds half the store timeout") {
		t.Fatalf("finding %q", c.Finding)
	}
}

// TestClockOffset measures Redis against a host clock set 5 s off.
func TestClockOffset(t *testing.T) {
	srv := startRedis(t)
	for _, skew := range []time.Duration{5 * time.Second, -5 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			opts := relaxed
			opts.Now = func() time.Time { return time.Now().Add(skew) }
			rep := diagnose(t, srv.URL(), opts)
			if got := findings(rep); fmt.Sprint(got) != "[clock]" {
				t.Fatalf("findings %v, want [clock]: %+v", got, rep.Checks)
			}
			// Redis's offset to this host is −skew, within the uncertainty
			// and the scheduling of a busy machine.
			if got, want := rep.Clock.OffsetMicros, -skew.Microseconds(); abs(got-want) > rep.Clock.UncertaintyMicros+50_000 {
				t.Fatalf("offset %d µs ± %d, want %d", got, rep.Clock.UncertaintyMicros, want)
			}
			dir := "behind"
			if skew < 0 {
				dir = "ahead of"
			}
			if c := check(t, rep, "clock"); !strings.Contains(c.Observed, dir+" this host's") {
				t.Fatalf("Observed = %q, want %q", c.Observed, dir)
			}
		})
	}
	// Within the allowed offset: no finding.
	opts := relaxed
	opts.Now = func() time.Time { return time.Now().Add(300 * time.Millisecond) }
	if rep := diagnose(t, srv.URL(), opts); !rep.Healthy() {
		t.Fatalf("a 300 ms offset: findings %v, want none", findings(rep))
	}
}

// TestUnreachable: nothing listens, or the password is wrong: an error
// wrapping ErrUnreachable that never holds the password.
func TestUnreachable(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv := startRedis(t)
	admin := adminClient(srv)
	defer admin.Close()
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "app", "on", ">right-password", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	const password = "wrong-Pa55word"
	for _, tc := range []struct {
		url     string
		refused bool // a server answers and refuses the password
	}{
		{fmt.Sprintf("redis://:%s@127.0.0.1:%d", password, port), false},
		{fmt.Sprintf("redis://app:%s@%s", password, srv.Addr()), true},
		{fmt.Sprintf("redis://app:%s@%s/0", password, srv.Addr()), true},
	} {
		url := tc.url
		_, err := doctor.Diagnose(context.Background(), url, relaxed)
		if !errors.Is(err, doctor.ErrUnreachable) {
			t.Fatalf("Diagnose(%s) error = %v, want ErrUnreachable", doctor.Redact(url), err)
		}
		if strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), "xxxxx") {
			t.Fatalf("error %q: want the password redacted", err)
		}
		// A server that answers and refuses the password is named as such.
		if got := errors.Is(err, redisstore.ErrAuth) && strings.Contains(err.Error(), "redis refused the login at ") &&
			strings.Contains(err.Error(), "WRONGPASS"); got != tc.refused {
			t.Errorf("Diagnose(%s) error = %q: a refused login %v, want %v", doctor.Redact(url), err, got, tc.refused)
		}
	}
	// No password where one is required: NOAUTH, and how to give one.
	if err := admin.ConfigSet(context.Background(), "requirepass", "right-password").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the server's own cleanup, which logs in without one
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "right-password"})
		defer c.Close()
		if err := c.ConfigSet(context.Background(), "requirepass", "").Err(); err != nil {
			t.Error(err)
		}
	})
	_, err = doctor.Diagnose(context.Background(), "redis://"+srv.Addr(), relaxed)
	if !errors.Is(err, doctor.ErrUnreachable) || !errors.Is(err, redisstore.ErrAuth) || !strings.Contains(err.Error(), "NOAUTH") ||
		!strings.Contains(err.Error(), "put it in the URL") {
		t.Errorf("Diagnose without a password: error %v, want a refused login that says NOAUTH and where the password goes", err)
	}
}

func TestInvalidInput(t *testing.T) {
	for _, url := range []string{"http://127.0.0.1:6379", "redis://:pw@127.0.0.1:notaport", "not a url", "redis://127.0.0.1:", "redis://:pw@127.0.0.1:/0"} {
		_, err := doctor.Diagnose(context.Background(), url, relaxed)
		if !errors.Is(err, doctor.ErrInvalidURL) {
			t.Errorf("Diagnose(%q) error = %v, want ErrInvalidURL", url, err)
		}
	}
	_, err := doctor.Diagnose(context.Background(), "redis://127.0.0.1:1", doctor.Options{Prefix: "rl:{x}:"})
	if err == nil || !strings.Contains(err.Error(), "braces") {
		t.Fatalf("a prefix with braces: error %v, want one about braces", err)
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis://:hunter2@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"rediss://app:hunter2@redis.example:6380", "rediss://app:xxxxx@redis.example:6380"},
		{"redis://app@127.0.0.1:6379", "redis://app@127.0.0.1:6379"},
		{"redis://:bad%zz@host", "(unparsable URL)"},
	}
	for _, tc := range cases {
		if got := doctor.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestJSON: the JSON form carries the schema, every check and the figures.
func TestJSON(t *testing.T) {
	srv := startRedis(t, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
	rep := diagnose(t, srv.URL(), relaxed)
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema   string `json:"schema"`
		Findings int    `json:"findings"`
		Checks   []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
			Fix  string `json:"fix"`
		} `json:"checks"`
		Latency struct {
			Samples int `json:"samples"`
		} `json:"latency"`
		Clock struct {
			Uncertainty int64 `json:"uncertainty_us"`
		} `json:"clock"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, buf.String())
	}
	if got.Schema != doctor.Schema || got.Findings != 1 || len(got.Checks) != len(allChecks) || got.Latency.Samples != relaxed.Pings || got.Clock.Uncertainty < 1 {
		t.Fatalf("JSON = %+v", got)
	}
	if c := got.Checks[2]; c.Name != "eviction" || c.OK || c.Fix == "" {
		t.Fatalf("eviction check in JSON = %+v, want a finding with its fix", c)
	}
}

package progress

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestPlainLines(t *testing.T) {
	var out syncBuffer
	var c Counters
	c.SetPhase("steady")
	d := Start(&out, "quickstart", Plan{Requests: 100}, false, time.Millisecond, &c)
	for range 30 {
		c.Add(history.Admitted)
	}
	for range 9 {
		c.Add(history.Rejected)
	}
	c.Add(history.Error)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "sent 40/100") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	d.Stop(nil)
	s := out.String()
	for _, want := range []string{"[quickstart] phase steady: sent 40/100, admitted 30, rejected 9, unknown 1", "[quickstart] done: phase steady"} {
		if !strings.Contains(s, want) {
			t.Fatalf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.ContainsAny(s, "\r\x1b") {
		t.Fatalf("plain output holds control characters: %q", s)
	}
}

func TestInteractiveOnlyOnTerminals(t *testing.T) {
	if Interactive(&bytes.Buffer{}) {
		t.Fatal("a buffer is not a terminal")
	}
	t.Setenv("CI", "true")
	if Interactive(&bytes.Buffer{}) {
		t.Fatal("CI=true must give plain lines")
	}
}

// The final line says done or interrupted, and counts against an upper
// bound as one: a run that sent fewer than it planned at most completed.
func TestFinalLine(t *testing.T) {
	tests := []struct {
		name        string
		plan        Plan
		sent        int64
		cause       error
		interactive bool
		want        string
	}{
		{"exact plan, done", Plan{Requests: 10}, 10, nil, false, "[quickstart] done: phase steady: sent 10/10,"},
		{"exact plan, done, bar", Plan{Requests: 10}, 10, nil, true, "[quickstart] done: phase steady: sent 10/10,"},
		{"upper bound, done short of it", Plan{Requests: 991, AtMost: true}, 972, nil, false, "[quickstart] done: phase steady: sent 972 of up to 991,"},
		{"interrupted", Plan{Requests: 991, AtMost: true}, 400, context.Canceled, false, "[quickstart] interrupted (context canceled): phase steady: sent 400 of up to 991,"},
		{"interrupted, bar", Plan{Requests: 10}, 4, context.Canceled, true, "[quickstart] interrupted (context canceled): phase steady: sent 4/10,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			var c Counters
			c.SetPhase("steady")
			d := Start(&out, "quickstart", tt.plan, tt.interactive, time.Hour, &c)
			c.Sent.Add(tt.sent)
			d.Stop(tt.cause)
			s := out.String()
			if !strings.Contains(s, tt.want) {
				t.Fatalf("output lacks %q:\n%q", tt.want, s)
			}
			if tt.cause != nil && strings.Contains(s, "done:") {
				t.Fatalf("an interrupted run's output says done:\n%q", s)
			}
		})
	}
}

func TestPlanString(t *testing.T) {
	for _, tt := range []struct {
		plan Plan
		want string
	}{
		{Plan{Requests: 396}, "396"},
		{Plan{Requests: 415, AtMost: true}, "up to 415"},
	} {
		if got := tt.plan.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.plan, got, tt.want)
		}
	}
}

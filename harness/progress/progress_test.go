package progress

import (
	"bytes"
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
	d := Start(&out, "quickstart", 100, false, time.Millisecond, &c)
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
	d.Stop()
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

func TestBarMode(t *testing.T) {
	var out syncBuffer
	var c Counters
	c.SetPhase("burst")
	d := Start(&out, "concurrency", 10, true, 0, &c)
	c.Sent.Add(10)
	d.Stop()
	if !strings.Contains(out.String(), "[concurrency] done: phase burst: sent 10/10") {
		t.Fatalf("bar mode output lacks the final line:\n%q", out.String())
	}
}

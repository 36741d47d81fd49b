package sampleapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
)

// startRun runs the sample API on a loopback listener until the returned
// cancel is called; done yields Run's result.
func startRun(t *testing.T, yamlText string) (addr string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cfg, err := ParseConfig("run.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Instance = "run-test"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, cfg, ln, nil, nil) }()
	t.Cleanup(cancel)
	return ln.Addr().String(), cancel, errc
}

// inFlightExport starts an export whose body is half sent, and returns once
// the handler is reading it ("Expect: 100-continue" makes the client wait
// for the handler's first read before sending the body), with the writer
// that completes it and the channel of its status.
func inFlightExport(t *testing.T, addr string) (*io.PipeWriter, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/reports/export", pr)
	req.Header.Set("Authorization", "Bearer demo-pro-key")
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	status := make(chan int, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte("first half,")); err != nil {
		t.Fatal(err)
	}
	return pw, status
}

func TestRunDrainsInFlightRequests(t *testing.T) {
	addr, cancel, done := startRun(t, "keys:\n  - key: demo-pro-key\n    rate_limit_per_minute: 600\n    rate_limit_burst: 100\n")
	pw, status := inFlightExport(t, addr)
	cancel() // as SIGTERM does
	// New connections are refused once the listener is closed; poll for it.
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v with a request in flight", err)
	default:
	}
	if _, err := pw.Write([]byte("second half")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if got := <-status; got != http.StatusOK {
		t.Fatalf("in-flight request: status = %d, want 200", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after a complete drain", err)
	}
}

func TestRunDrainIsBounded(t *testing.T) {
	addr, cancel, done := startRun(t, "shutdown_timeout: 200ms\nkeys:\n  - key: demo-pro-key\n    rate_limit_per_minute: 600\n    rate_limit_burst: 100\n")
	pw, status := inFlightExport(t, addr)
	cancel()
	err := <-done // the request never completes: Run gives up after the timeout
	if err == nil || !strings.Contains(err.Error(), "drain in-flight requests") {
		t.Fatalf("Run = %v, want a drain timeout error", err)
	}
	pw.CloseWithError(io.ErrClosedPipe) // let the client notice its connection is gone
	if got := <-status; got == http.StatusOK {
		t.Fatal("the never-completed request was answered 200")
	}
}

func TestRedisDefaults(t *testing.T) {
	tests := []struct {
		url        string
		dial, read time.Duration
		maxRetries int
	}{
		{"redis://127.0.0.1:6379/0", DefaultRedisDialTimeout, DefaultRedisIOTimeout, DefaultRedisMaxRetries},
		{"redis://127.0.0.1:6379/0?dial_timeout=3s&read_timeout=50ms&max_retries=-1", 3 * time.Second, 50 * time.Millisecond, -1},
	}
	for _, tt := range tests {
		opts, err := redis.ParseURL(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		applyRedisDefaults(opts, tt.url)
		if opts.DialTimeout != tt.dial || opts.ReadTimeout != tt.read || opts.MaxRetries != tt.maxRetries {
			t.Errorf("%s: dial %v read %v retries %d; want %v %v %d", tt.url, opts.DialTimeout, opts.ReadTimeout, opts.MaxRetries, tt.dial, tt.read, tt.maxRetries)
		}
	}
}

// downStore fails every call, as a Redis store does while Redis is down.
type downStore struct{}

func (downStore) AllowN(context.Context, string, int64, ...limiter.Limit) (limiter.Decision, error) {
	return limiter.Decision{}, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}
func (downStore) Peek(context.Context, string, ...limiter.Limit) (limiter.Decision, error) {
	return limiter.Decision{}, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}
func (downStore) Reset(context.Context, string, ...limiter.Limit) error { return nil }

func TestFailureModes(t *testing.T) {
	// demo key: burst 4, negligible refill; with two instances the
	// fallback's share is 2.
	const keys = "keys:\n  - key: k\n    rate_limit_per_minute: 0.001\n    rate_limit_burst: 4\n"
	tests := []struct {
		mode   string
		want   []int // statuses of consecutive requests
		retry  bool  // rejections carry Retry-After
		header bool  // RateLimit fields present
	}{
		{"", []int{503, 503}, true, false},
		{"open", []int{200, 200, 200}, false, false},
		{"closed", []int{503, 503}, true, false},
		{"fallback", []int{200, 200, 429, 429}, true, false},
	}
	for _, tt := range tests {
		t.Run("mode "+tt.mode, func(t *testing.T) {
			cfg, err := ParseConfig("test.yaml", []byte(keys+"instances: 2\nfailure_mode: "+tt.mode+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Instance = "fm"
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			var lim limiter.Limiter = downStore{}
			if tt.mode != "" {
				r, err := Resilient(lim, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				lim = r
			}
			srv, err := NewServer(cfg, lim, NewStaticKeys(cfg.Keys), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &apiFixture{srv: srv}
			for i, want := range tt.want {
				w := f.do("GET", "/v1/data", bearer("k")...)
				if w.Code != want {
					t.Fatalf("request %d: status = %d, want %d (%s)", i, w.Code, want, w.Body)
				}
				if ra := w.Header().Get("Retry-After"); want != 200 && tt.retry && ra == "" {
					t.Fatalf("request %d: no Retry-After on %d", i, w.Code)
				}
				if got := w.Header().Get("RateLimit") != ""; got != tt.header {
					t.Fatalf("request %d: RateLimit present = %v, want %v", i, got, tt.header)
				}
			}
		})
	}
	cfg, _ := ParseConfig("test.yaml", []byte("failure_mode: sideways\n"))
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `failure_mode: "sideways"; use open, closed or fallback`) {
		t.Fatalf("bad failure mode: error = %v", err)
	}
}

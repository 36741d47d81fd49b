package sampleapi

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSlowClientsAreCut opens connections that trickle a request, one byte
// every 100 ms, on loopback: half trickle a body after complete headers
// (the slow-body attack), half trickle the headers themselves (slowloris).
// Each must be cut by the server within its read timeout (plus a slack for
// a busy machine), not held while the client keeps sending; and a normal
// request meanwhile is answered at once.
func TestSlowClientsAreCut(t *testing.T) {
	const (
		headerTimeout = 300 * time.Millisecond
		readTimeout   = time.Second
		slack         = time.Second
		perKind       = 16
		trickle       = 100 * time.Millisecond
	)
	// A burst of 1,000 admits every export (cost 10) the test sends.
	const bench = "keys:\n  - key: demo-pro-key\n    rate_limit_per_minute: 60000\n    rate_limit_burst: 1000\n"
	addr, _, started, _ := runOn(t, bench+"read_header_timeout: 300ms\nread_timeout: 1s\nwrite_timeout: 2s\n")
	<-started
	kinds := []struct {
		name    string
		head    string // sent at once
		drip    string // sent a byte at a time, repeated
		timeout time.Duration
	}{
		{"slow body", "POST /v1/reports/export HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer demo-pro-key\r\nContent-Length: 100000\r\n\r\n", "x", readTimeout},
		{"slow headers", "GET /v1/data HTTP/1.1\r\nHost: api\r\n", "X-Slow: 1\r\n", headerTimeout},
	}
	type cut struct {
		kind    int
		held    time.Duration
		sent    int
		replied string
	}
	cuts := make(chan cut, 2*perKind)
	var wg sync.WaitGroup
	for k, kind := range kinds {
		for range perKind {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			wg.Go(func() {
				t0 := time.Now()
				closed := make(chan struct{})
				var reply []byte
				go func() {
					defer close(closed)
					reply, _ = io.ReadAll(io.LimitReader(conn, 4096)) // until the server closes
				}()
				sent := 0
				if _, err := io.WriteString(conn, kind.head); err == nil {
					tick := time.NewTicker(trickle)
				drip:
					for i := 0; ; i++ {
						select {
						case <-closed:
							break drip
						case <-tick.C:
						}
						if _, err := conn.Write([]byte{kind.drip[i%len(kind.drip)]}); err != nil {
							break
						}
						sent++
						if time.Since(t0) > kind.timeout+3*slack { // the server did not cut it: give up
							break
						}
					}
					tick.Stop()
				}
				conn.SetReadDeadline(time.Now().Add(slack))
				<-closed
				first, _, _ := strings.Cut(string(reply), "\r\n")
				cuts <- cut{kind: k, held: time.Since(t0), sent: sent, replied: first}
			})
		}
	}
	// A normal request while every slow client is connected.
	time.Sleep(2 * trickle)
	t1 := time.Now()
	if resp := get(t, "http://"+addr+"/v1/data", "demo-pro-key"); resp.StatusCode != 200 {
		t.Errorf("normal request during the attack: %d, want 200", resp.StatusCode)
	}
	if d := time.Since(t1); d > slack {
		t.Errorf("normal request during the attack took %v", d)
	}
	wg.Wait()
	close(cuts)
	longest := make([]time.Duration, len(kinds))
	n := 0
	for c := range cuts {
		n++
		kind := kinds[c.kind]
		longest[c.kind] = max(longest[c.kind], c.held)
		if c.held > kind.timeout+slack {
			t.Errorf("%s: held %v (%d bytes trickled), want cut within the timeout %v (+%v)", kind.name, c.held.Round(time.Millisecond), c.sent, kind.timeout, slack)
		}
		if c.held < kind.timeout-50*time.Millisecond {
			t.Errorf("%s: cut after %v, before its timeout %v: the test did not hold it open", kind.name, c.held.Round(time.Millisecond), kind.timeout)
		}
		if c.kind == 0 && c.replied != "HTTP/1.1 400 Bad Request" {
			t.Errorf("%s: reply %q, want 400 once the body could not be read in time", kind.name, c.replied)
		}
	}
	if n != 2*perKind {
		t.Fatalf("%d connections reported, want %d", n, 2*perKind)
	}
	t.Logf("longest hold: slow body %v (read timeout %v), slow headers %v (header timeout %v)",
		longest[0].Round(time.Millisecond), readTimeout, longest[1].Round(time.Millisecond), headerTimeout)
	if resp := get(t, "http://"+addr+"/v1/data", "demo-pro-key"); resp.StatusCode != 200 {
		t.Errorf("request after the attack: %d, want 200", resp.StatusCode)
	}
}

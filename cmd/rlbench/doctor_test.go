//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/doctor"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestDoctorCommand: usage errors exit 2, a healthy Redis 0, a finding 1;
// flags may follow the URL.
func TestDoctorCommand(t *testing.T) {
	healthy := redistest.StartForTest(t)
	srv, err := redistest.Start(context.Background(), redistest.Options{Args: []string{"--maxmemory", "10mb", "--maxmemory-policy", "volatile-lru"}})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { srv.Stop() })
	ctx := context.Background()
	for _, args := range [][]string{
		nil,
		{healthy.URL(), srv.URL()},
		{"--pings", "0", healthy.URL()},
		{"--frobnicate", healthy.URL()},
		{"http://" + healthy.Addr()},
	} {
		var out bytes.Buffer
		var ue *usageError
		if err := (&doctorCommand{stdout: &out}).Run(ctx, args); !errors.As(err, &ue) {
			t.Errorf("doctor %q: error %v, want a usage error (exit 2)", args, err)
		}
	}
	var out bytes.Buffer
	if err := (&doctorCommand{stdout: &out}).Run(ctx, []string{healthy.URL(), "--store-timeout", "10s", "--pings", "20"}); err != nil {
		t.Fatalf("healthy Redis: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "healthy: no findings") {
		t.Fatalf("healthy Redis: output\n%s", out.String())
	}
	out.Reset()
	err = (&doctorCommand{stdout: &out}).Run(ctx, []string{"--store-timeout=10s", srv.URL(), "--json"})
	if !errors.Is(err, errChecksFailed) {
		t.Fatalf("volatile-lru with maxmemory: error %v, want errChecksFailed (exit 1)", err)
	}
	var rep doctor.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v in\n%s", err, out.String())
	}
	if rep.Findings != 1 || rep.Checks[2].Name != "eviction" || rep.Checks[2].OK {
		t.Fatalf("--json report %+v, want one eviction finding", rep)
	}
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	err = (&doctorCommand{stdout: &out}).Run(ctx, []string{"redis://:topsecret@127.0.0.1:" + strconv.Itoa(port)})
	var ue *usageError
	if err == nil || errors.Is(err, errChecksFailed) || errors.As(err, &ue) || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("unreachable Redis: error %v, want a plain error (exit 2) without the password", err)
	}
}

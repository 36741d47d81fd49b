//go:build unix

package instances

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestMain doubles as a minimal `rlbench serve` when the launcher starts the
// test binary with fakeServeEnv set: it binds --addr, prints the listening
// line and answers /healthz with the instance name of its --config file
// until SIGTERM.
const fakeServeEnv = "INSTANCES_TEST_FAKE_SERVE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeServeEnv); mode != "" {
		os.Exit(fakeServe(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeServe(mode string, args []string) int {
	var addr string
	var cfg struct {
		Instance string `yaml:"instance"`
	}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--addr":
			addr = args[i+1]
		case "--config":
			data, err := os.ReadFile(args[i+1])
			if err == nil {
				err = yaml.Unmarshal(data, &cfg)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
	}
	name := cfg.Instance
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "config: unknown key \"burts\"")
		return 2
	}
	if mode == "silent" {
		time.Sleep(time.Minute)
		return 0
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", name)
	})}
	go srv.Serve(ln)
	fmt.Printf("listening on %s\n", ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	srv.Shutdown(context.Background())
	return 0
}

func spec(t *testing.T, name, mode string) Spec {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(cfg, []byte("instance: "+name+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Spec{Name: name, Binary: os.Args[0], Config: cfg, Env: []string{fakeServeEnv + "=" + mode}, StartTimeout: 2 * time.Second}
}

func instanceName(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.Header.Get("X-Instance")
}

func TestGroupLifecycle(t *testing.T) {
	ctx := context.Background()
	g, err := StartGroup(ctx, []Spec{spec(t, "i1", "ok"), spec(t, "i2", "ok"), spec(t, "i3", "ok")})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop(time.Second)
	for i, url := range g.URLs() {
		if got, want := instanceName(t, url), fmt.Sprintf("i%d", i+1); got != want {
			t.Fatalf("instance %d answers as %q, want %q", i, got, want)
		}
	}
	victim := g.Find("i2")
	addr := victim.Addr()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	if victim.Running() {
		t.Fatal("Running after Kill")
	}
	if _, err := http.Get(victim.URL() + "/healthz"); err == nil {
		t.Fatal("a killed instance still answers")
	}
	if err := victim.Kill(); err != ErrNotRunning {
		t.Fatalf("second Kill = %v, want ErrNotRunning", err)
	}
	if err := victim.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if victim.Addr() != addr {
		t.Fatalf("restarted on %s, want the same address %s", victim.Addr(), addr)
	}
	if got := instanceName(t, victim.URL()); got != "i2" {
		t.Fatalf("restarted instance answers as %q", got)
	}
	g.Stop(time.Second)
	for _, in := range g {
		if in.Running() {
			t.Fatalf("%s still running after Stop", in.Name())
		}
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		mode string
		want string
	}{
		{"crash", `unknown key "burts"`}, // the instance's own error reaches the user
		{"silent", "no \"listening on ADDR\" line"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			_, err := StartGroup(context.Background(), []Spec{spec(t, "ok", "ok"), spec(t, "bad", tc.mode)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("StartGroup error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

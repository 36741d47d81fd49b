package peers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/rlbench/rlbench/scenarios"
)

// GoPeersEnv names the environment variable that, when set, is the
// rlbench-gopeers executable, which serves the Go peers (httprate,
// ulule_limiter, go_limiter). It is a module of its own
// (harness/peers/gopeers), so that rlbench does not link those libraries.
const GoPeersEnv = "RLBENCH_GOPEERS"

// GoPeersInstall is how to build rlbench-gopeers, from the repository's root.
const GoPeersInstall = "make peers (or: go build -C harness/peers/gopeers -o ../../../bin/rlbench-gopeers .)"

// goPeersPath finds rlbench-gopeers: $RLBENCH_GOPEERS, else next to the
// running executable (bin/rlbench, as make builds both), else on the
// PATH, else bin/rlbench-gopeers under the working directory.
func goPeersPath() (string, error) {
	const name = "rlbench-gopeers"
	if v := os.Getenv(GoPeersEnv); v != "" {
		path, err := exec.LookPath(v)
		if err != nil {
			return "", &NotInstalledError{Peer: name, Install: GoPeersInstall, Err: fmt.Errorf("%s=%s: %w", GoPeersEnv, v, err)}
		}
		return filepath.Abs(path)
	}
	if exe, err := os.Executable(); err == nil {
		if path := filepath.Join(filepath.Dir(exe), name); isExecutable(path) {
			return path, nil
		}
	}
	if path, err := exec.LookPath(name); err == nil {
		return filepath.Abs(path)
	}
	path, err := filepath.Abs(filepath.Join("bin", name))
	if err == nil && isExecutable(path) {
		return path, nil
	}
	return "", &NotInstalledError{Peer: name, Install: GoPeersInstall, Err: fmt.Errorf("%s not found next to the executable, on the PATH or in ./bin", name)}
}

// isExecutable reports whether path is a regular file someone may execute.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// StartGoPeer starts sc.Target.Instances rlbench-gopeers processes serving
// the httprate, ulule_limiter or go_limiter peer on loopback (ulule_limiter
// sharing the Redis at redisURL; the others each keep their counters in
// memory), logging under dir. It returns a *NotInstalledError when
// rlbench-gopeers is not built. Stop stops them; on error StartGoPeer has.
func StartGoPeer(ctx context.Context, sc *scenarios.Scenario, dir, redisURL string) (*Procs, error) {
	bin, err := goPeersPath()
	if err != nil {
		return nil, err
	}
	if dir, err = absDir(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Target.Peer, err)
	}
	cfg, err := NewProcConfig(sc, redisURL)
	if err != nil {
		return nil, err
	}
	return startProcs(ctx, procSpec{name: string(sc.Target.Peer), args: []string{bin}, config: cfg}, sc.Target.Instances, dir)
}

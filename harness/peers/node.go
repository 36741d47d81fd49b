package peers

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/rlbench/rlbench/scenarios"
)

// The Node.js peers' servers and the package files that pin their
// dependencies (installed with npm ci, see NodePeersInstall).
var (
	//go:embed node/rlflex.js
	rlflexServer []byte
	//go:embed node/fastify.js
	fastifyServer []byte
	//go:embed node/package.json
	nodePackageJSON []byte
	//go:embed node/package-lock.json
	nodePackageLock []byte
)

// NodePeersEnv names the environment variable that, when set, is the
// directory holding the Node.js peers' node_modules; by default it is
// rlbench/nodepeers under the user's cache directory
// (~/.cache/rlbench/nodepeers).
const NodePeersEnv = "RLBENCH_NODE_PEERS_DIR"

// nodeModules are the npm packages each Node.js peer loads.
var nodeModules = map[scenarios.Peer][]string{
	scenarios.PeerRateLimiterFlexible: {"express", "ioredis", "rate-limiter-flexible"},
	scenarios.PeerFastify:             {"fastify", "ioredis", "@fastify/rate-limit"},
}

// NodePeersDir is the directory whose node_modules the Node.js peers load.
func NodePeersDir() string {
	if d := os.Getenv(NodePeersEnv); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "rlbench", "nodepeers")
}

// NodePeersInstall is the command that installs the Node.js peers'
// packages in dir, at the versions harness/peers/node/package-lock.json
// pins.
func NodePeersInstall(dir string) string {
	return "make peers (or: mkdir -p " + dir + " && cp harness/peers/node/package*.json " + dir + " && npm ci --prefix " + dir + ")"
}

// WriteNodePackage writes the Node.js peers' package.json and
// package-lock.json into dir, for `npm ci --prefix dir`.
func WriteNodePackage(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), nodePackageJSON, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "package-lock.json"), nodePackageLock, 0o644)
}

// nodePeer finds node and the packages peer needs, or returns a
// *NotInstalledError.
func nodePeer(peer scenarios.Peer) (node, modules string, err error) {
	dir := NodePeersDir()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	node, err = exec.LookPath("node")
	if err == nil {
		node, err = filepath.Abs(node)
	}
	if err != nil {
		return "", "", &NotInstalledError{Peer: string(peer), Install: "apt-get install nodejs npm, then " + NodePeersInstall(dir), Err: err}
	}
	modules = filepath.Join(dir, "node_modules")
	for _, m := range nodeModules[peer] {
		if _, err := os.Stat(filepath.Join(modules, m, "package.json")); err != nil {
			return "", "", &NotInstalledError{Peer: string(peer), Install: NodePeersInstall(dir), Err: fmt.Errorf("npm package %s: %w", m, err)}
		}
	}
	return node, modules, nil
}

// StartNode starts sc.Target.Instances node processes of the
// rate_limiter_flexible or fastify peer on loopback, sharing the Redis at
// redisURL, with the server script and logs under dir. It returns a
// *NotInstalledError when node or the npm packages are missing. Stop stops
// them; on error StartNode has.
func StartNode(ctx context.Context, sc *scenarios.Scenario, dir, redisURL string) (*Procs, error) {
	script, name := rlflexServer, "rlflex"
	if sc.Target.Peer == scenarios.PeerFastify {
		script, name = fastifyServer, "fastify"
	}
	node, modules, err := nodePeer(sc.Target.Peer)
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
	path := filepath.Join(dir, name+"-server.js")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		return nil, err
	}
	return startProcs(ctx, procSpec{
		name:   name,
		args:   []string{node, path},
		env:    []string{"NODE_PATH=" + modules, "NODE_ENV=production"},
		config: cfg,
	}, sc.Target.Instances, dir)
}

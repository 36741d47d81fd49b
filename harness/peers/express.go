package peers

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rlbench/rlbench/scenarios"
)

// expressServer is the express-rate-limit peer's server, run by node.
//
//go:embed express/server.js
var expressServer []byte

// ExpressEnv names the environment variable that, when set, is the
// directory holding the express peer's node_modules; by default it is
// rlbench/express under the user's cache directory (~/.cache/rlbench/express).
const ExpressEnv = "RLBENCH_EXPRESS_DIR"

// expressModules are the npm packages the express peer needs.
var expressModules = []string{"express", "express-rate-limit", "rate-limit-redis", "redis"}

// ExpressDir is the directory whose node_modules the express peer loads.
func ExpressDir() string {
	if d := os.Getenv(ExpressEnv); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "rlbench", "express")
}

// expressInstall is the command that installs the express peer's packages in dir.
func expressInstall(dir string) string {
	return "npm install --prefix " + dir + " " + strings.Join(expressModules, " ")
}

// expressNode finds node and the packages the express peer needs, or
// returns a *NotInstalledError.
func expressNode() (node, modules string, err error) {
	dir := ExpressDir()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	node, err = exec.LookPath("node")
	if err == nil {
		node, err = filepath.Abs(node)
	}
	if err != nil {
		return "", "", &NotInstalledError{Peer: "express", Install: "apt-get install nodejs npm, then " + expressInstall(dir), Err: err}
	}
	modules = filepath.Join(dir, "node_modules")
	for _, m := range expressModules {
		if _, err := os.Stat(filepath.Join(modules, m, "package.json")); err != nil {
			return "", "", &NotInstalledError{Peer: "express", Install: expressInstall(dir), Err: fmt.Errorf("npm package %s: %w", m, err)}
		}
	}
	return node, modules, nil
}

// expressRoute is a route in the server's configuration.
type expressRoute struct {
	Method   string `json:"method"`
	Path     string `json:"path"`
	Limit    int64  `json:"limit,omitempty"`
	WindowMs int64  `json:"windowMs,omitempty"`
}

// expressConfig is the server's configuration, passed as JSON.
type expressConfig struct {
	Port     int            `json:"port"`
	RedisURL string         `json:"redisURL"`
	Header   string         `json:"header"`
	Routes   []expressRoute `json:"routes"`
}

// ExpressConfig is the JSON configuration of an express peer instance for
// sc: each limited route under express-rate-limit with limit = the fixed
// window's rate and windowMs = its period, keyed by the identity header, on
// the Redis at redisURL; port 0 picks a free port.
func ExpressConfig(sc *scenarios.Scenario, redisURL string) ([]byte, error) {
	cfg := expressConfig{RedisURL: redisURL, Header: sc.Identities.Header}
	for _, rt := range sc.Target.Routes {
		er := expressRoute{Method: rt.Method, Path: rt.Path}
		if er.Method == "" {
			er.Method = "GET"
		}
		if rt.Cost != 1 {
			return nil, fmt.Errorf("route %s: express-rate-limit charges one unit per request, not %d", rt.Path, rt.Cost)
		}
		if len(rt.Policies) > 1 {
			return nil, fmt.Errorf("route %s: one policy per route, not %d", rt.Path, len(rt.Policies))
		}
		for _, l := range rt.Policies {
			if err := scenarios.PeerExpress.CheckPolicy(l); err != nil {
				return nil, fmt.Errorf("route %s: %w", rt.Path, err)
			}
			er.Limit, er.WindowMs = int64(l.Rate), l.Period.Milliseconds()
		}
		cfg.Routes = append(cfg.Routes, er)
	}
	return json.Marshal(cfg)
}

// Express is a set of running express peer instances.
type Express struct {
	procs  []*exec.Cmd
	exited []chan struct{}
	urls   []string
}

// URLs are the instances' base URLs, "http://127.0.0.1:PORT".
func (e *Express) URLs() []string { return e.urls }

// Names are the instances' names as histories record them: express-1, …
func (e *Express) Names() []string {
	names := make([]string, len(e.urls))
	for i := range names {
		names[i] = "express-" + strconv.Itoa(i+1)
	}
	return names
}

// StartExpress starts sc.Target.Instances node processes of the express
// peer on loopback, sharing the Redis at redisURL, with the server script
// and logs under dir (a relative dir is taken from the working directory;
// node is given absolute paths only). It returns a *NotInstalledError when
// node or the npm packages are missing, and for an instance that does not
// start, an error with what it wrote before it failed. Stop stops them; on
// error StartExpress has.
func StartExpress(ctx context.Context, sc *scenarios.Scenario, dir, redisURL string) (*Express, error) {
	node, modules, err := expressNode()
	if err != nil {
		return nil, err
	}
	if dir, err = absDir(dir); err != nil {
		return nil, fmt.Errorf("express: %w", err)
	}
	conf, err := ExpressConfig(sc, redisURL)
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "express-server.js")
	if err := os.WriteFile(script, expressServer, 0o644); err != nil {
		return nil, err
	}
	e := &Express{}
	for i := range max(sc.Target.Instances, 1) {
		name := "express-" + strconv.Itoa(i+1)
		url, err := e.start(ctx, node, script, modules, conf, filepath.Join(dir, name+".log"))
		if err != nil {
			e.Stop()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		e.urls = append(e.urls, url)
	}
	return e, nil
}

func (e *Express) start(ctx context.Context, node, script, modules string, conf []byte, logPath string) (string, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "NODE_ENV=production", "RLBENCH_EXPRESS_CONFIG="+string(conf))
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", node, err)
	}
	addr, exited, output, err := awaitListening(ctx, cmd, stdout)
	if err != nil {
		return "", startError(fmt.Errorf("%s %s: %w", node, script, err), output, logPath)
	}
	e.procs = append(e.procs, cmd)
	e.exited = append(e.exited, exited)
	return "http://" + addr, nil
}

// Stop stops the instances. It is safe to call twice.
func (e *Express) Stop() {
	for i, cmd := range e.procs {
		stopProcess(cmd, e.exited[i])
	}
	e.procs, e.exited = nil, nil
}

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

// flaskApp is the Flask-Limiter peer's app, run by python3.
//
//go:embed flask/app.py
var flaskApp []byte

// FlaskLimiterInstall is how to install the Flask-Limiter peer on Debian
// and Ubuntu: the distribution's packages, for /usr/bin/python3.
const FlaskLimiterInstall = "apt-get install python3-flask-limiter python3-limits python3-redis python3-waitress"

// PythonEnv names the environment variable that, when set, is the python3
// that runs the Flask-Limiter peer instead of /usr/bin/python3.
const PythonEnv = "RLBENCH_PYTHON"

// flaskModules are the Python modules the peer imports.
const flaskModules = "flask, flask_limiter, limits, redis, waitress"

// flaskPython finds a python3 that imports the peer's modules:
// $RLBENCH_PYTHON, else /usr/bin/python3 (where the distribution's packages
// install; a python3 earlier on the PATH may be another one), else python3
// on the PATH.
func flaskPython(ctx context.Context) (string, error) {
	candidates := []string{"/usr/bin/python3", "python3"}
	if v := os.Getenv(PythonEnv); v != "" {
		candidates = []string{v}
	}
	var lastErr error
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			lastErr = err
			continue
		}
		out, err := exec.CommandContext(ctx, path, "-c", "import "+flaskModules).CombinedOutput()
		if err != nil {
			lastErr = fmt.Errorf("%s cannot import %s: %v: %s", path, flaskModules, err, out)
			continue
		}
		return path, nil
	}
	return "", &NotInstalledError{Peer: "flask_limiter", Install: FlaskLimiterInstall, Err: lastErr}
}

// StartFlaskLimiter starts sc.Target.Instances python3 processes of the
// Flask-Limiter peer on loopback, sharing the Redis at redisURL, with the
// app and logs under dir. It returns a *NotInstalledError when python3 or
// its packages are missing. Stop stops them; on error StartFlaskLimiter has.
func StartFlaskLimiter(ctx context.Context, sc *scenarios.Scenario, dir, redisURL string) (*Procs, error) {
	python, err := flaskPython(ctx)
	if err != nil {
		return nil, err
	}
	if dir, err = absDir(dir); err != nil {
		return nil, fmt.Errorf("flask_limiter: %w", err)
	}
	cfg, err := NewProcConfig(sc, redisURL)
	if err != nil {
		return nil, err
	}
	algs := map[string]bool{}
	for _, rt := range cfg.Routes {
		if rt.Limit > 0 {
			algs[rt.Algorithm] = true
		}
	}
	if len(algs) > 1 {
		return nil, fmt.Errorf("flask_limiter: one strategy per app; the routes claim %d algorithms", len(algs))
	}
	script := filepath.Join(dir, "flask-limiter-app.py")
	if err := os.WriteFile(script, flaskApp, 0o644); err != nil {
		return nil, err
	}
	return startProcs(ctx, procSpec{name: "flask", args: []string{python, script}, config: cfg}, sc.Target.Instances, dir)
}

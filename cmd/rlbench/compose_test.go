package main

import (
	"bufio"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

// repoRoot is the repository root, two levels above this package.
const repoRoot = "../.."

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       yaml.Node         `yaml:"build"`
	User        string            `yaml:"user"`
	Command     yaml.Node         `yaml:"command"`
	Entrypoint  yaml.Node         `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Healthcheck struct {
		Test yaml.Node `yaml:"test"`
	} `yaml:"healthcheck"`
	Volumes  []string `yaml:"volumes"`
	Ports    []string `yaml:"ports"`
	Profiles []string `yaml:"profiles"`
}

// interpolate expands s as docker compose does with no variable set: each
// ${VAR:-default} or ${VAR-default} becomes its default, ${VAR} and $VAR
// nothing, and $$ a literal $ (left for the container's shell).
func interpolate(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			expr := s[i+2 : i+end]
			if _, def, ok := strings.Cut(expr, "-"); ok {
				b.WriteString(strings.TrimPrefix(def, "-"))
			}
			i += end
		default:
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			i = j - 1
		}
	}
	return b.String()
}

// args returns a command, entrypoint or health check, in list or string
// form, interpolated.
func args(n yaml.Node) []string {
	var list []string
	if n.Kind == yaml.ScalarNode {
		list = []string{n.Value}
	} else if err := n.Decode(&list); err != nil {
		return nil
	}
	for i, a := range list {
		list[i] = interpolate(a)
	}
	return list
}

// env returns the service's environment, interpolated.
func (svc composeService) env() map[string]string {
	out := map[string]string{}
	for k, v := range svc.Environment {
		out[k] = interpolate(v)
	}
	return out
}

// mounts maps container paths to their source in the repository: the
// image's COPY destinations and a service's bind mounts.
type mounts map[string]string

// hostPath returns the repository file behind a container path, through
// the service's bind mounts or the image's COPY lines.
func (m mounts) hostPath(container string) (string, bool) {
	best, host := "", ""
	for c, h := range m {
		if (container == c || strings.HasPrefix(container, strings.TrimSuffix(c, "/")+"/")) && len(c) > len(best) {
			best, host = c, h
		}
	}
	if best == "" {
		return "", false
	}
	if container == best {
		return host, true
	}
	return filepath.Join(host, strings.TrimPrefix(container, strings.TrimSuffix(best, "/")+"/")), true
}

// dockerfileCopies returns the COPY lines of the Dockerfile that copy from
// the build context, as destination to source, and fails t when a source
// does not exist.
func dockerfileCopies(t *testing.T) mounts {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	defer f.Close()
	m := mounts{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--from") {
			continue
		}
		dest := fields[len(fields)-1]
		for _, src := range fields[1 : len(fields)-1] {
			if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
				t.Errorf("Dockerfile:%d: COPY source %s: %v", line, src, err)
			}
			if src != "." {
				m[dest] = filepath.Join(repoRoot, src)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// loadCompose reads and decodes docker-compose.yml.
func loadCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return cf
}

// TestDockerCompose checks docker-compose.yml without a Docker engine: every
// rlbench service's command line is accepted by rlbench's own parser for
// serve (and its configuration, with the service's environment, validates),
// every file it references exists, and the API instances share one Redis
// under distinct names.
func TestDockerCompose(t *testing.T) {
	cf := loadCompose(t)
	image := dockerfileCopies(t)
	var (
		serves    int
		redisURLs = map[string]bool{}
		names     = map[string]string{}
		hostPorts = map[string]string{}
	)
	for name, svc := range cf.Services {
		for _, p := range svc.Ports {
			host := p[:strings.LastIndexByte(p, ':')]
			if other, dup := hostPorts[host]; dup {
				t.Errorf("services %s and %s publish the same host port %s", name, other, host)
			}
			hostPorts[host] = name
		}
		svcMounts := mounts{}
		for dest, src := range image {
			svcMounts[dest] = src
		}
		for _, v := range svc.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) < 2 || !strings.HasPrefix(parts[0], "./") {
				continue
			}
			host := filepath.Join(repoRoot, parts[0])
			if parts[0] != "./rlbench-out" { // output directory, created by the run
				if _, err := os.Stat(host); err != nil {
					t.Errorf("service %s: volume %s: %v", name, v, err)
				}
			}
			svcMounts[parts[1]] = host
		}
		if svc.Build.Kind == yaml.ScalarNode {
			if _, err := os.Stat(filepath.Join(repoRoot, svc.Build.Value, "Dockerfile")); err != nil {
				t.Errorf("service %s: build context %s has no Dockerfile: %v", name, svc.Build.Value, err)
			}
		}
		if svc.Image != "rlbench:dev" {
			continue
		}
		var args []string
		if err := svc.Command.Decode(&args); err != nil || len(args) == 0 {
			t.Errorf("service %s: command must be a non-empty list of arguments: %v", name, err)
			continue
		}
		args = composeArgs(args)
		switch args[0] {
		case "serve":
			if len(svc.Profiles) == 0 {
				serves++
			}
			env := svc.env()
			t.Setenv(sampleapi.RedisURLEnv, env[sampleapi.RedisURLEnv])
			t.Setenv(sampleapi.PostgresURLEnv, env[sampleapi.PostgresURLEnv])
			c := &serveCommand{}
			f, set, err := c.parse(args[1:])
			if err != nil {
				t.Errorf("service %s: rlbench serve rejects %q: %v", name, args[1:], err)
				continue
			}
			if set["config"] {
				host, ok := svcMounts.hostPath(f.config)
				if !ok {
					t.Errorf("service %s: --config %s is neither mounted nor in the image", name, f.config)
					continue
				}
				f.config = host
			}
			cfg, err := f.configure(set)
			if err != nil {
				t.Errorf("service %s: configuration: %v", name, err)
				continue
			}
			if cfg.Store != "redis" {
				t.Errorf("service %s: store %q; the instances must share Redis", name, cfg.Store)
			}
			redisURLs[cfg.Redis] = true
			if other, dup := names[cfg.Instance]; dup {
				t.Errorf("services %s and %s share the instance name %q", name, other, cfg.Instance)
			}
			names[cfg.Instance] = name
		default:
			if _, ok := commands[args[0]]; !ok {
				t.Logf("service %s: command %q is not registered in this build; only its files are checked", name, args[0])
			}
			for _, a := range args[1:] {
				if !strings.HasPrefix(a, "/etc/rlbench/") {
					continue
				}
				host, ok := svcMounts.hostPath(a)
				if !ok {
					t.Errorf("service %s: %s is neither mounted nor in the image", name, a)
					continue
				}
				if _, err := os.Stat(host); err != nil {
					t.Errorf("service %s: %s: %v", name, a, err)
					continue
				}
				if strings.HasSuffix(a, "scenario.yaml") {
					if _, err := scenarios.LoadFile(host); err != nil {
						t.Errorf("service %s: scenario %s: %v", name, a, err)
					}
				}
			}
		}
	}
	if serves != 3 {
		t.Errorf("serve services without a profile = %d, want 3 sample API instances", serves)
	}
	if len(redisURLs) != 1 {
		t.Errorf("the instances use %d Redis URLs %v, want one shared", len(redisURLs), redisURLs)
	}
}

func TestMountsHostPath(t *testing.T) {
	m := mounts{"/etc/rlbench/": "repo/sampleapi/config", "/etc/rlbench/compose.yaml": "repo/x.yaml"}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"/etc/rlbench/compose.yaml", "repo/x.yaml", true},
		{"/etc/rlbench/default.yaml", "repo/sampleapi/config/default.yaml", true},
		{"/etc/other.yaml", "", false},
	}
	for _, tt := range tests {
		got, ok := m.hostPath(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("hostPath(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// composeArgs interpolates a command's arguments.
func composeArgs(list []string) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = interpolate(a)
	}
	return out
}

// TestComposeSecureByDefault holds docker-compose.yml to a deployable
// example's defaults: no port published beyond loopback, a Redis that
// requires the password the instances are given, no secret on any command
// line (ps shows it to every user), no service running as root, and
// instances that read PostgreSQL as a role that is not its superuser and
// may only read the keys (config/postgres-init.sql).
func TestComposeSecureByDefault(t *testing.T) {
	cf := loadCompose(t)
	secretName := regexp.MustCompile(`(?i)password|secret|token|_auth`)
	secrets := map[string]string{} // value → where it is defined
	for name, svc := range cf.Services {
		for k, v := range svc.env() {
			if secretName.MatchString(k) && v != "" {
				secrets[v] = name + " " + k
			}
			if u, err := url.Parse(v); err == nil {
				if p, ok := u.User.Password(); ok && p != "" {
					secrets[p] = name + " " + k
				}
			}
		}
	}
	var redisPassword, pgOwner, pgAPIPassword string
	pgDSNs := 0
	for name, svc := range cf.Services {
		t.Run(name, func(t *testing.T) {
			for _, p := range svc.Ports {
				host, _, ok := strings.Cut(p, ":")
				ip := net.ParseIP(strings.Trim(host, "[]"))
				if !ok || strings.Count(p, ":") < 2 && !strings.HasPrefix(p, "[") || ip == nil || !ip.IsLoopback() {
					t.Errorf("ports %q: published on every interface; publish on 127.0.0.1 (\"127.0.0.1:8081:8080\")", p)
				}
			}
			user := interpolate(svc.User)
			if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
				t.Errorf("user %q: the service runs as root; name a user of its image", svc.User)
			}
			var lines [][]string
			lines = append(lines, args(svc.Command), args(svc.Entrypoint), args(svc.Healthcheck.Test))
			for _, line := range lines {
				for _, a := range line {
					for secret, where := range secrets {
						if strings.Contains(a, secret) {
							t.Errorf("the command line %q holds the secret of %s", line, where)
						}
					}
					if redisstore.RedactURL(a) != a {
						t.Errorf("the command line %q holds a password", line)
					}
				}
			}
			env := svc.env()
			if strings.HasPrefix(svc.Image, "redis:") {
				joined := strings.Join(args(svc.Command), " ")
				ref := regexp.MustCompile(`requirepass "?\$\{?([A-Za-z_][A-Za-z0-9_]*)`).FindStringSubmatch(joined)
				if ref == nil || env[ref[1]] == "" {
					t.Errorf("command %q: Redis requires no password; write requirepass from a variable of its environment", joined)
				} else {
					redisPassword = env[ref[1]]
				}
			}
			if strings.HasPrefix(svc.Image, "postgres:") {
				pgOwner = cmpOr(env["POSTGRES_USER"], "postgres")
				pgAPIPassword = env["RLBENCH_API_DB_PASSWORD"]
				init := false
				for _, v := range svc.Volumes {
					if strings.Contains(v, "postgres-init.sql:/docker-entrypoint-initdb.d/") {
						init = true
					}
				}
				if !init || pgAPIPassword == "" {
					t.Errorf("postgres: mount sampleapi/config/postgres-init.sql in /docker-entrypoint-initdb.d/ and give RLBENCH_API_DB_PASSWORD")
				}
			}
		})
	}
	if redisPassword == "" {
		t.Fatal("no Redis service with a password")
	}
	init, err := os.ReadFile(filepath.Join(repoRoot, "sampleapi/config/postgres-init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for name, svc := range cf.Services {
		env := svc.env()
		if raw := env[sampleapi.RedisURLEnv]; raw != "" {
			u, err := url.Parse(raw)
			if p, _ := u.User.Password(); err != nil || p != redisPassword {
				t.Errorf("service %s: %s = %s, want the password Redis requires", name, sampleapi.RedisURLEnv, redisstore.RedactURL(raw))
			}
		}
		if raw := env[sampleapi.PostgresURLEnv]; raw != "" {
			pgDSNs++
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("service %s: %s: %v", name, sampleapi.PostgresURLEnv, err)
			}
			user := u.User.Username()
			if user == "" || user == pgOwner || user == "postgres" {
				t.Errorf("service %s: PostgreSQL user %q is the superuser; use the role postgres-init.sql creates", name, user)
			}
			if p, _ := u.User.Password(); p != pgAPIPassword {
				t.Errorf("service %s: the PostgreSQL password is not the one postgres-init.sql gives %s", name, user)
			}
			if !strings.Contains(string(init), "\\set api_role "+user+"\n") ||
				!strings.Contains(string(init), `GRANT SELECT ON api_keys, rlbench_migrations TO :"api_role";`) {
				t.Errorf("service %s: postgres-init.sql does not create role %s with read rights only", name, user)
			}
			for _, grant := range regexp.MustCompile(`(?m)^GRANT .*$`).FindAllString(string(init), -1) {
				if regexp.MustCompile(`(?i)\b(INSERT|UPDATE|DELETE|CREATE|ALL|TRUNCATE)\b`).MatchString(grant) {
					t.Errorf("postgres-init.sql: %q grants more than reading", grant)
				}
			}
		}
	}
	if pgDSNs == 0 {
		t.Error("no instance reads keys from PostgreSQL; the role check would check nothing")
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestInterpolate(t *testing.T) {
	cases := []struct{ in, want string }{
		{"redis://:${REDIS_PASSWORD:-dev}@redis:6379/0", "redis://:dev@redis:6379/0"},
		{"${A-x}${B}", "x"},
		{`echo "requirepass $$REDIS_PASSWORD"`, `echo "requirepass $REDIS_PASSWORD"`},
		{"$HOME/x", "/x"},
		{"${RLBENCH_UID:-1000}:${RLBENCH_GID:-1000}", "1000:1000"},
	}
	for _, tc := range cases {
		if got := interpolate(tc.in); got != tc.want {
			t.Errorf("interpolate(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

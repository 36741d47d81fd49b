package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/scenarios"
)

// repoRoot is the repository root, two levels above this package.
const repoRoot = "../.."

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image    string    `yaml:"image"`
	Build    yaml.Node `yaml:"build"`
	Command  yaml.Node `yaml:"command"`
	Volumes  []string  `yaml:"volumes"`
	Ports    []string  `yaml:"ports"`
	Profiles []string  `yaml:"profiles"`
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

// TestDockerCompose checks docker-compose.yml without a Docker engine: every
// rlbench service's command line is accepted by rlbench's own parser for
// serve (and its configuration validates), every file it references
// exists, and the API instances share one Redis under distinct names.
func TestDockerCompose(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	image := dockerfileCopies(t)
	var (
		serves    int
		redisURLs = map[string]bool{}
		names     = map[string]string{}
		hostPorts = map[string]string{}
	)
	for name, svc := range cf.Services {
		for _, p := range svc.Ports {
			host, _, _ := strings.Cut(p, ":")
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
		switch args[0] {
		case "serve":
			serves++
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
		t.Errorf("serve services = %d, want 3 sample API instances", serves)
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

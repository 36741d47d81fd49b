package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/scenarios"
)

// DefaultImage is the Docker image the docker provider runs.
const DefaultImage = "redis:7-alpine"

// dockerPingTimeout bounds the check that a Docker engine answers.
const dockerPingTimeout = 3 * time.Second

// DockerAvailable reports nil when a Docker engine answers (at DOCKER_HOST
// or the default socket), or an error wrapping ErrUnavailable that says why
// not.
func DockerAvailable(ctx context.Context) error {
	_, err := dockerPool(ctx)
	return err
}

func dockerPool(ctx context.Context) (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("%w: docker: %v", ErrUnavailable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, dockerPingTimeout)
	defer cancel()
	if err := pool.Client.PingWithContext(ctx); err != nil {
		return nil, fmt.Errorf("%w: no Docker engine answers: %v", ErrUnavailable, err)
	}
	return pool, nil
}

// Docker is a Redis container bound to a loopback port chosen in advance,
// so that it keeps its address across Restart. It runs without persistence
// and supports every fault (kill, restart empty, pause, resume). It is safe
// for concurrent use; the zero value is not usable, call StartDocker.
type Docker struct {
	pool *dockertest.Pool
	res  *dockertest.Resource
	addr string
	stop func() bool

	once sync.Once
	err  error
}

var _ Faulty = (*Docker)(nil)

// StartDocker runs image (DefaultImage when empty) and waits for it to
// answer PING. Errors wrap ErrUnavailable when no engine answers, or the
// container's start failure. The container is removed when ctx ends or
// Close is called.
func StartDocker(ctx context.Context, image string) (*Docker, error) {
	pool, err := dockerPool(ctx)
	if err != nil {
		return nil, err
	}
	if image == "" {
		image = DefaultImage
	}
	repo, tag, ok := strings.Cut(image, ":")
	if !ok {
		tag = "latest"
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("start docker redis: %w", err)
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository:   repo,
		Tag:          tag,
		Cmd:          []string{"redis-server", "--save", "", "--appendonly", "no"},
		Labels:       map[string]string{"org.rlbench": "redis"},
		PortBindings: map[dc.Port][]dc.PortBinding{"6379/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)}}},
	}, func(hc *dc.HostConfig) {
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, fmt.Errorf("start docker redis %s: %w", image, err)
	}
	d := &Docker{pool: pool, res: res, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	d.stop = closeOnDone(ctx, func() { d.Close() })
	if err := ping(ctx, &redis.Options{Addr: d.addr}, readyTimeout); err != nil {
		d.Close()
		return nil, fmt.Errorf("start docker redis: %w", err)
	}
	return d, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// URL implements Redis.
func (d *Docker) URL() string { return "redis://" + d.addr }

// Addr implements Redis.
func (d *Docker) Addr() string { return d.addr }

// Provider implements Redis.
func (d *Docker) Provider() scenarios.Provider { return scenarios.ProviderDocker }

// Close removes the container and its volumes. It is idempotent.
func (d *Docker) Close() error {
	d.once.Do(func() {
		d.stop()
		d.err = d.pool.Purge(d.res)
	})
	return d.err
}

// Kill implements Faulty with SIGKILL to the container.
func (d *Docker) Kill() error {
	return d.pool.Client.KillContainer(dc.KillContainerOptions{ID: d.res.Container.ID, Signal: dc.SIGKILL})
}

// Restart implements Faulty: the container starts again, empty (no
// persistence), on the same port.
func (d *Docker) Restart(ctx context.Context) error {
	if err := d.pool.Client.RestartContainer(d.res.Container.ID, 0); err != nil {
		return fmt.Errorf("restart docker redis: %w", err)
	}
	return ping(ctx, &redis.Options{Addr: d.addr}, readyTimeout)
}

// Pause implements Faulty by freezing the container's processes.
func (d *Docker) Pause() error { return d.pool.Client.PauseContainer(d.res.Container.ID) }

// Resume implements Faulty.
func (d *Docker) Resume() error { return d.pool.Client.UnpauseContainer(d.res.Container.ID) }

package faults

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and waits up to wait for the echo.
func roundTrip(addr string, wait time.Duration) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(start.Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "ping\n" {
		return 0, errors.New("echo mismatch: " + line)
	}
	return time.Since(start), nil
}

func startProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := StartProxy("", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestProxyFaults(t *testing.T) {
	tests := []struct {
		name   string
		inject func(p *Proxy) error
		check  func(t *testing.T, took time.Duration, err error)
	}{
		{
			name:   "healthy",
			inject: func(*Proxy) error { return nil },
			check: func(t *testing.T, _ time.Duration, err error) {
				if err != nil {
					t.Fatalf("round trip through a healthy proxy: %v", err)
				}
			},
		},
		{
			name:   "latency",
			inject: func(p *Proxy) error { return p.AddLatency(200*time.Millisecond, 0) },
			check: func(t *testing.T, took time.Duration, err error) {
				// A lower bound only: latency can only make it slower.
				if err != nil || took < 200*time.Millisecond {
					t.Fatalf("round trip took %v (err %v), want at least the 200ms injected", took, err)
				}
			},
		},
		{
			name:   "blackhole",
			inject: func(p *Proxy) error { return p.Blackhole() },
			check: func(t *testing.T, _ time.Duration, err error) {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("round trip through a black hole: %v, want the client's deadline to expire", err)
				}
			},
		},
		{
			name:   "reset",
			inject: func(p *Proxy) error { return p.ResetConnections() },
			check: func(t *testing.T, _ time.Duration, err error) {
				if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("round trip through resets: %v, want a connection error", err)
				}
			},
		},
		{
			name:   "disconnect",
			inject: func(p *Proxy) error { p.Disconnect(); return nil },
			check: func(t *testing.T, _ time.Duration, err error) {
				var opErr *net.OpError
				if !errors.As(err, &opErr) || opErr.Op != "dial" {
					t.Fatalf("dial through a disconnected proxy: %v, want a refused dial", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t)
			if err := tc.inject(p); err != nil {
				t.Fatal(err)
			}
			took, err := roundTrip(p.Addr(), time.Second)
			tc.check(t, took, err)
			// Every fault is undone by Clear and Reconnect.
			p.Clear()
			if err := p.Reconnect(); err != nil {
				t.Fatal(err)
			}
			if _, err := roundTrip(p.Addr(), 5*time.Second); err != nil {
				t.Fatalf("after Clear and Reconnect: %v", err)
			}
		})
	}
}

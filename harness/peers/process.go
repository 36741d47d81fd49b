package peers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// maxOutputBytes caps what is kept of a peer's output for an error message.
const maxOutputBytes = 16 << 10

// tailBuffer keeps the last maxOutputBytes written to it, as a peer's
// stdout or stderr. It is safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p, dropping the oldest bytes beyond maxOutputBytes.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - maxOutputBytes; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

// String returns what is kept.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// absDir returns dir as an absolute, clean path, so that a peer given it
// finds its files whatever its own working directory or prefix: NGINX
// resolves a relative -c or -e against its -p prefix, so a relative
// prefix doubles (rlbench-out/x/rlbench-out/x/nginx.conf).
func absDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("directory %q: %w", dir, err)
	}
	return abs, nil
}

// startError is the error of a peer process that did not start: the
// failure, then what the process wrote to its output and to each log file
// in logs (a file that is missing or empty is left out), so that the peer's
// own message reaches the user.
func startError(failure error, output string, logs ...string) error {
	var b strings.Builder
	if s := strings.TrimSpace(output); s != "" {
		fmt.Fprintf(&b, "\n  its output:\n%s", indent(s))
	}
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if s := strings.TrimSpace(string(data)); err == nil && s != "" {
			fmt.Fprintf(&b, "\n  %s:\n%s", path, indent(s))
		}
	}
	if b.Len() == 0 {
		return fmt.Errorf("%w (it wrote nothing to its output or logs)", failure)
	}
	return fmt.Errorf("%w;%s", failure, b.String())
}

// indent prefixes every line of s with four spaces.
func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// awaitListening waits for the started cmd to print "listening on ADDR" on
// stdout, as every peer process rlbench starts does once it serves. It
// returns the address and a channel closed when cmd exits; or, when cmd
// exits first, ctx ends or startTimeout passes, it stops cmd and returns
// why, with what cmd printed before (for startError).
func awaitListening(ctx context.Context, cmd *exec.Cmd, stdout io.Reader) (addr string, exited chan struct{}, output string, err error) {
	listening := make(chan string, 1)
	out := &tailBuffer{} // stdout up to the listening line
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				listening <- a
				break
			}
			_, _ = out.Write([]byte(sc.Text() + "\n"))
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case a := <-listening:
		return a, exited, "", nil
	case <-exited:
		err = errors.New("exited before listening")
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("not listening after %v", startTimeout)
	}
	stopProcess(cmd, exited)
	return "", nil, out.String(), err
}

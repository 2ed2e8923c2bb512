package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pairbench/pairbench/internal/heldir"
)

// process is one running Chromium and its profile directory.
type process struct {
	cmd     *exec.Cmd
	dir     string        // the fresh --user-data-dir, removed by stop
	hold    *os.File      // dir, flocked until stop (see CleanStale)
	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error         // valid once exited is closed
	stderr  *tailBuffer
	wsURL   string
}

// startProcess starts Chromium on a fresh profile directory and waits until
// it writes its DevTools endpoint. The process lives in its own process group,
// so stop (or the end of ctx) kills every process it started.
func startProcess(ctx context.Context, cfg Config) (_ *process, err error) {
	dir, hold, err := heldir.Make(cfg.TempDir, profilePrefix)
	if err != nil {
		return nil, fmt.Errorf("create profile dir: %w", err)
	}
	p := &process{dir: dir, hold: hold, exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	cmd := exec.Command(cfg.ChromiumPath, cfg.args(dir)...)
	cmd.Dir = dir
	cmd.Stdout = p.stderr
	cmd.Stderr = p.stderr
	// A helper that outlives the group kill must not hold Wait on the
	// output pipe forever.
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If pairbench dies without closing the browser, the kernel kills
		// Chromium's main process; its children then lose their parent and
		// exit. Close and ctx still kill the whole group.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		hold.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.ChromiumPath, err)
	}
	p.cmd = cmd
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	defer func() {
		if err != nil {
			p.stop()
		}
	}()

	wait, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	p.wsURL, err = p.endpoint(wait)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// endpoint polls the profile's DevToolsActivePort file, which Chromium writes
// once its DevTools server listens, and returns the browser websocket URL.
func (p *process) endpoint(ctx context.Context) (string, error) {
	file := filepath.Join(p.dir, "DevToolsActivePort")
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(file); err == nil {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) == 2 {
				port, err := strconv.Atoi(lines[0])
				if err != nil || port <= 0 {
					return "", fmt.Errorf("bad DevToolsActivePort %q", b)
				}
				return fmt.Sprintf("ws://127.0.0.1:%d%s", port, strings.TrimSpace(lines[1])), nil
			}
		}
		select {
		case <-p.exited:
			return "", fmt.Errorf("chromium exited before it listened (%v): %s", p.waitErr, p.stderr)
		case <-ctx.Done():
			return "", fmt.Errorf("chromium did not listen: %w: %s", ctx.Err(), p.stderr)
		case <-tick.C:
		}
	}
}

// exitErr says how Chromium exited, once it has.
func (p *process) exitErr() error {
	select {
	case <-p.exited:
		return fmt.Errorf("chromium exited (%v): %s", p.waitErr, p.stderr)
	default:
		return nil
	}
}

// stop kills every process of the browser's process group, waits for the
// main process, and removes the profile directory. It is safe to call more
// than once.
func (p *process) stop() error {
	if p.cmd != nil && p.cmd.Process != nil {
		// The negative pid names the process group Setpgid gave the browser.
		if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill chromium: %w", err)
		}
		<-p.exited
	}
	// Chromium's helpers can still be writing into the profile for a moment
	// after the group is killed; retry the removal briefly.
	var err error
	for range 20 {
		if err = os.RemoveAll(p.dir); err == nil {
			p.hold.Close() // a second stop gets os.ErrClosed, harmlessly
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("remove profile dir: %w", err)
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

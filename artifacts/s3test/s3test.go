// Package s3test runs a real S3 server for tests: versitygw, which
// scripts/setup.sh builds into tools/bin. It checks request signatures, so a
// test with the wrong credentials fails as it would against S3.
package s3test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pairbench/pairbench/internal/realstack"
)

// Region is the region the server runs in.
const Region = "us-east-1"

// Server is a running versitygw on a free loopback port.
type Server struct {
	// Endpoint is the server's URL (http://127.0.0.1:PORT).
	Endpoint string
	// Access and Secret are the credentials it accepts.
	Access, Secret string

	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
}

// Start starts versitygw (bin) with the given credentials and one empty
// bucket per name, and waits until it listens. The caller must Close it.
func Start(bin, access, secret string, buckets ...string) (*Server, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("the test S3 server is missing (%w); run `make setup` to build it into tools/bin", err)
	}
	dir, err := os.MkdirTemp("", "pairbench-versitygw-")
	if err != nil {
		return nil, err
	}
	// The posix backend serves each top-level directory as a bucket.
	for _, b := range buckets {
		if err := os.Mkdir(filepath.Join(dir, b), 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	// Reserve a free port, then hand it to the server.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()

	cmd := exec.Command(bin, "--port", addr, "--access", access, "--secret", secret,
		"--region", Region, "--quiet", "posix", dir)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	// If the test binary dies without Close, the server goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	s := &Server{Endpoint: "http://" + addr, Access: access, Secret: secret, cmd: cmd, exited: make(chan struct{}), dir: dir}
	go func() { _ = cmd.Wait(); close(s.exited) }()

	// Generous for a busy machine; an exit ends the wait at once.
	for deadline := time.Now().Add(time.Minute); ; {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("versitygw exited at start: %s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("versitygw not listening on %s after a minute: %s", addr, logs.String())
		}
	}
}

// StartT is Start for one test: it fails the test when the server cannot
// start and closes it when the test ends.
func StartT(t testing.TB, bin, access, secret string, buckets ...string) *Server {
	t.Helper()
	realstack.Need(t, realstack.S3Server)
	s, err := Start(bin, access, secret, buckets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// PID is the server's process id (a test that checks what its processes
// left running knows this one is its own).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Close stops the server and removes its data.
func (s *Server) Close() {
	_ = s.cmd.Process.Kill()
	<-s.exited
	os.RemoveAll(s.dir)
}

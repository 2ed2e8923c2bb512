// Package statetest starts real databases for tests of the service's
// state: a fresh SQLite state directory, or a database on a PostgreSQL
// server (Debian's postgresql package, which scripts/setup.sh installs)
// that this package starts itself on a loopback port and a temporary data
// directory, as an unprivileged user when the tests run as root.
package statetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// server is the one PostgreSQL server of a test binary.
type server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	err  error
}

var (
	once    sync.Once
	shared  server
	nextDB  atomic.Int64
	stopped = make(chan struct{})
)

// Postgres returns the URL of a new, empty database on the test binary's
// PostgreSQL server, starting the server on first use, and drops the
// database when the test ends. Call Stop from TestMain after m.Run.
func Postgres(t testing.TB) string {
	t.Helper()
	once.Do(func() { shared.err = shared.start() })
	if shared.err != nil {
		t.Fatalf("statetest: PostgreSQL: %v", shared.err)
	}
	name := fmt.Sprintf("pbtest_%d_%d", os.Getpid(), nextDB.Add(1))
	admin := shared.url("postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := execSQL(ctx, admin, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("statetest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := execSQL(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("statetest: drop database %s: %v", name, err)
		}
	})
	return shared.url(name)
}

// ServerPID is the process id of the server the tests share, 0 if none
// was started. It is a child of the test process.
func ServerPID() int {
	if shared.cmd == nil || shared.cmd.Process == nil {
		return 0
	}
	return shared.cmd.Process.Pid
}

// Stop stops the server, if one was started, and removes its data.
func Stop() {
	if shared.cmd == nil || shared.cmd.Process == nil {
		return
	}
	_ = shared.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		_ = shared.cmd.Process.Kill()
		<-stopped
	}
	_ = os.RemoveAll(shared.dir)
}

func (s *server) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

func execSQL(ctx context.Context, url, sql string) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// binDir finds Debian's PostgreSQL binaries (not on $PATH), the newest
// version first.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no initdb: install Debian's postgresql package (make setup does)")
}

// credential is who runs the server: PostgreSQL refuses to run as root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root and no user nobody to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *server) start() error {
	bin, err := binDir()
	if err != nil {
		return err
	}
	cred, err := credential()
	if err != nil {
		return err
	}
	// Not under t.TempDir, whose parents only the test's user may enter.
	if s.dir, err = os.MkdirTemp("", "pairbench-pg-"); err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = s.dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, lastLines(out))
	}
	if s.port, err = freePort(); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return err
	}
	if cred != nil {
		_ = logFile.Chown(int(cred.Uid), int(cred.Gid))
	}
	// The postmaster is a child of a thread locked for its lifetime, so
	// the parent-death signal fires only when the test binary dies.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(s.port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
			"-c", "max_connections=200", "-c", "fsync=on", "-c", "synchronous_commit=on")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
		cmd.Stdout, cmd.Stderr, cmd.Dir = logFile, logFile, s.dir
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		s.cmd = cmd
		started <- nil
		_ = cmd.Wait()
		close(stopped)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	// Generous for a busy machine; the server's exit ends the wait at once.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := execSQL(ctx, s.url("postgres"), "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-stopped:
			log, _ := os.ReadFile(logFile.Name())
			return fmt.Errorf("postgres exited: %s", lastLines(log))
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			return fmt.Errorf("postgres not ready after 2 minutes: %v: %s", err, lastLines(log))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-8):], "\n")
}

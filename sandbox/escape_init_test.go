package sandbox

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attacks on what the sandbox is started with: the launcher's descriptors
// and the sandbox's own PID 1. Each runs in the full policy (egress, a
// service beside the command) as the runner's trials do.

// fullSandbox returns a sandbox with an egress and this test binary mounted
// read-only (for the escape helper), closed when the test ends.
func fullSandbox(t *testing.T) (*Sandbox, string) {
	t.Helper()
	bin := testBinary(t)
	e := startEgress(t, EgressConfig{})
	return openSandbox(t, Policy{Egress: e, ReadOnly: []string{bin}}), bin
}

// runFull runs script (bash: any descriptor number works in a redirection)
// in sb, with a service beside it that runs svc unless svc is empty.
func runFull(t *testing.T, sb *Sandbox, script, svc string) shResult {
	t.Helper()
	var services []Service
	if svc != "" {
		services = []Service{{Args: []string{"bash", "-c", svc}, Port: 7300, Backend: 7301}}
	}
	return runScript(t, sb, "bash", script, services)
}

// TestEscapeInheritedDescriptors: descriptors the launcher holds without
// close-on-exec (here a 0600 host file opened read-only and another opened
// read-write, and a TCP socket connected to a host listener) never reach
// the command or a service: every descriptor number is tried, for reading
// and for writing.
func TestEscapeInheritedDescriptors(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		secret := newMarker(t, "inherited")
		dir := t.TempDir()
		ro, rw := filepath.Join(dir, "ro"), filepath.Join(dir, "rw")
		require.NoError(t, os.WriteFile(ro, []byte(secret+"\n"), 0o600))
		require.NoError(t, os.WriteFile(rw, []byte("untouched\n"), 0o600))
		var fds []int
		for _, f := range []struct {
			path string
			mode int
		}{{ro, syscall.O_RDONLY}, {rw, syscall.O_RDWR}} {
			fd, err := syscall.Open(f.path, f.mode, 0) // no O_CLOEXEC
			require.NoError(t, err)
			fds = append(fds, fd)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		var received atomic.Int64
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					buf := make([]byte, 512)
					for {
						n, err := c.Read(buf)
						received.Add(int64(n))
						if err != nil {
							c.Close()
							return
						}
					}
				}()
			}
		}()
		sock, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0) // no SOCK_CLOEXEC
		require.NoError(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		require.NoError(t, syscall.Connect(sock, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}))
		fds = append(fds, sock)
		// Where the launcher's own descriptors are low, bubblewrap's files
		// take their numbers; a long-lived launcher's are anywhere.
		for i, fd := range fds {
			high := 120 + i
			require.NoError(t, syscall.Dup3(fd, high, 0))
			syscall.Close(fd)
			fds[i] = high
		}
		defer func() {
			for _, fd := range fds {
				syscall.Close(fd)
			}
		}()

		probe := `for fd in $(seq 3 130); do
			{ timeout 1 cat <&$fd; echo pwned >&$fd; } 2>/dev/null
		done
		ls -l /proc/self/fd/ 2>&1; true`
		sb, _ := fullSandbox(t)
		r := runFull(t, sb, probe, probe+"; sleep 30")
		assert.NotContains(t, r.out, secret, "an inherited descriptor was read")
		for _, fd := range fds {
			assert.NotContains(t, r.out, "-> "+ro, "descriptor %d", fd)
			assert.NotContains(t, r.out, "-> socket:", "descriptor %d", fd)
		}
		b, err := os.ReadFile(rw)
		require.NoError(t, err)
		assert.Equal(t, "untouched\n", string(b), "an inherited descriptor was written")
		time.Sleep(100 * time.Millisecond)
		assert.Zero(t, received.Load(), "bytes reached the host listener through an inherited socket")

		// The positive control: the probe does read a descriptor it is given.
		c := sb.Command(t.Context(), "/bin/sh", "-c", `cat <&3`)
		f := os.NewFile(uintptr(fds[0]), ro)
		c.ExtraFiles = []*os.File{f}
		var out bytes.Buffer
		c.Stdout = &out
		require.NoError(t, c.Run())
		assert.Contains(t, out.String(), secret, "ExtraFiles still reach the command")
	})
}

// TestEscapeSandboxPID1: the sandbox's PID 1 (the init) runs as the agent's
// own uid, but nothing inside may read or write its memory, take its
// descriptors or read its environment: through it the agent could make
// the sandbox outlive its launcher. The agent's own process and its
// services stay the agent's to inspect.
func TestEscapeSandboxPID1(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		sb, bin := fullSandbox(t)
		helper := bin + " " + escapeArg
		attempts := []struct{ name, script string }{
			{"read PID 1's memory", helper + ` mem-open 1`},
			{"write PID 1's memory", helper + ` mem-open 1 rw`},
			{"read PID 1's thread's memory", helper + ` mem-open 1/task/1`},
			{"take PID 1's descriptors with pidfd_getfd", helper + ` pidfd-getfd 1`},
			{"list PID 1's descriptors", `ls /proc/1/fd /proc/1/map_files | grep .`},
			{"read PID 1's environment", `tr '\0' '\n' < /proc/1/environ | grep .`},
			{"read PID 1's memory map", `grep . /proc/1/maps`},
			{"ptrace PID 1", helper + ` ptrace 1`},
			{"process_vm_readv of PID 1", helper + ` vm-read 1`},
			{"enter PID 1's root", `ls /proc/1/root/ | grep .`},
			{"read PID 1's descriptors' details", `cat /proc/1/fdinfo/0 /proc/1/fdinfo/3 | grep .`},
			{"read PID 1's binary and directory", `head -c 4 /proc/1/exe | grep -a ELF || ls /proc/1/cwd/ | grep .`},
			{"read PID 1's auxiliary vector, system call and stack", `cat /proc/1/auxv /proc/1/syscall /proc/1/stack 2>/dev/null | grep -a .`},
			{"open PID 1's namespaces", `ls -l /proc/1/ns/ | grep -a ':\['`},
			{"read another thread's memory of PID 1", `for t in /proc/1/task/*; do ` + helper + ` mem-open ${t#/proc/} && exit 0; done; exit 1`},
		}
		for _, a := range attempts {
			t.Run(a.name, func(t *testing.T) {
				r := runFull(t, sb, a.script, "sleep 30")
				assert.NotEqual(t, 0, r.code, "the attempt got through:\n%s", r.out)
				assert.NotContains(t, r.out, "ALLOWED")
			})
		}
		// PID 1 is the init, and the agent may still inspect itself.
		r := runFull(t, sb, `cat /proc/1/cmdline | tr '\0' ' '; echo; head -c 1 /proc/self/environ >/dev/null && echo self-ok`, "")
		require.Equal(t, 0, r.code, r.out)
		assert.Contains(t, r.out, InitArg)
		assert.Contains(t, r.out, "self-ok")
	})
}

// TestEscapeLauncherStdio: the command's standard descriptors are pipes,
// never the launcher's own files. Given the launcher's log as stdout and
// stderr and a file as stdin, the agent tries to reopen them through
// /proc/self/fd to read the log, truncate it, rewrite the stdin file and
// reach the host file behind them; with no stdio given it tries the same
// on whatever it got instead.
func TestEscapeLauncherStdio(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		dir := t.TempDir()
		earlier := newMarker(t, "launcher-log")
		logPath, inPath := filepath.Join(dir, "launcher.log"), filepath.Join(dir, "stdin")
		require.NoError(t, os.WriteFile(logPath, []byte(earlier+"\n"), 0o600))
		require.NoError(t, os.WriteFile(inPath, []byte("input line\n"), 0o600))
		logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		defer logf.Close()
		in, err := os.Open(inPath)
		require.NoError(t, err)
		defer in.Close()

		sb, _ := fullSandbox(t)
		// $$: the shell's own descriptors (in $(...) fd 1 is another pipe).
		// What the shell finds goes to descriptor 3, a pipe of the test's
		// own: cat reopening the stdout pipe for reading would take
		// whatever the launcher had not copied out of it yet.
		script := `read -r line; echo "got: $line" >&3
			for n in 0 1 2; do echo "fd $n -> $(readlink /proc/$$/fd/$n)" >&3; done
			exec 3>&-
			timeout 2 cat /proc/$$/fd/1 /proc/$$/fd/2 2>/dev/null | grep -c pbcanary-launcher-log
			: 2>/dev/null > /proc/$$/fd/1; : 2>/dev/null > /proc/$$/fd/2
			echo rewritten 2>/dev/null > /proc/$$/fd/0
			chmod 666 /proc/$$/fd/0 /proc/$$/fd/1 2>/dev/null
			true`
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		c := sb.Command(ctx, "bash", "-c", script)
		c.Stdin, c.Stdout, c.Stderr = in, logf, logf
		found, w, err := os.Pipe()
		require.NoError(t, err)
		defer found.Close()
		c.ExtraFiles = []*os.File{w}
		require.NoError(t, c.Start())
		w.Close()
		require.NoError(t, c.Wait())
		report, err := io.ReadAll(found)
		require.NoError(t, err)

		b, err := os.ReadFile(logPath)
		require.NoError(t, err)
		log := string(b)
		assert.True(t, strings.HasPrefix(log, earlier+"\n"), "the launcher's log was truncated:\n%s", log)
		assert.Contains(t, string(report), "got: input line", "stdin still reads the launcher's input")
		assert.Contains(t, log, "\n0\n", "the command read the launcher's log back:\n%s", log)
		for n := range 3 {
			assert.Regexp(t, `fd `+strconv.Itoa(n)+` -> pipe:\[`, string(report), "descriptor %d is not a pipe", n)
		}
		b, err = os.ReadFile(inPath)
		require.NoError(t, err)
		assert.Equal(t, "input line\n", string(b), "the stdin file was rewritten")
		for _, p := range []string{logPath, inPath} {
			st, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "%s's mode changed", p)
		}

		// No stdio at all: the command still gets pipes, not the host's
		// /dev/null.
		var out bytes.Buffer
		c = sb.Command(ctx, "bash", "-c", `for n in 0 1 2; do echo "fd $n -> $(readlink /proc/$$/fd/$n)" >&3; done`)
		r, w, err := os.Pipe()
		require.NoError(t, err)
		c.ExtraFiles = []*os.File{w}
		require.NoError(t, c.Start())
		w.Close()
		go func() { c.Wait(); r.Close() }()
		io.Copy(&out, r)
		for n := range 3 {
			assert.Regexp(t, `fd `+strconv.Itoa(n)+` -> pipe:\[`, out.String(), "descriptor %d is not a pipe", n)
		}
	})
}

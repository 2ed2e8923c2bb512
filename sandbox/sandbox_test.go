package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/realstack"
)

// needBwrap is realstack.Need for bubblewrap (skipped with -short, a
// failure when it is not installed), and skips the test when this host's
// kernel will not let bubblewrap create the sandbox this package builds
// (user, PID and network namespaces, non-root uid).
func needBwrap(t testing.TB) {
	t.Helper()
	realstack.Need(t, realstack.Bubblewrap)
	out, err := exec.Command("bwrap", "--unshare-user", "--uid", "1000", "--unshare-pid", "--unshare-net",
		"--disable-userns", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/lib", "/lib",
		"/usr/bin/true").CombinedOutput()
	if err != nil {
		t.Skipf("bubblewrap cannot create user namespaces here: %v: %s", err, out)
	}
}

// newCanary returns a random marker that cannot occur by chance.
func newMarker(t testing.TB, what string) string {
	t.Helper()
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "pbcanary-" + what + "-" + hex.EncodeToString(b)
}

// openSandbox creates a sandbox for p and closes it when the test ends,
// checking that Close removed the per-agent directory.
func openSandbox(t testing.TB, p Policy) *Sandbox {
	t.Helper()
	sb, err := New(t.Context(), p)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, sb.Close())
		_, err := os.Stat(filepath.Dir(sb.Home()))
		assert.True(t, errors.Is(err, os.ErrNotExist), "per-agent directory left behind: %v", err)
	})
	return sb
}

// shResult is what a script inside a sandbox printed (stdout and stderr
// together) and its exit status.
type shResult struct {
	out  string
	code int
}

// runSh runs script with /bin/sh inside sb, bounded in time.
func runSh(t testing.TB, sb *Sandbox, script string) shResult {
	t.Helper()
	return runScript(t, sb, "/bin/sh", script, nil)
}

// runScript runs script with shell inside sb, with services beside it,
// bounded in time.
func runScript(t testing.TB, sb *Sandbox, shell, script string, services []Service) shResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	c := sb.Command(ctx, shell, "-c", script)
	c.Stdout, c.Stderr = &out, &out
	c.Services = services
	err := c.Run()
	r := shResult{out: out.String()}
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "sandbox did not run: %s", out.String())
		r.code = ee.ExitCode()
	}
	return r
}

func TestSandboxIdentityAndDirectories(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	r := runSh(t, sb, `set -e
		id -u; id -g; echo "$HOME $TMPDIR"; pwd; hostname
		echo home > /tmp/h.txt; echo ws > /workspace/w.txt
		whoami`)
	require.Equal(t, 0, r.code, r.out)
	assert.Equal(t, "1000\n1000\n/tmp /tmp\n/workspace\nsandbox\nagent\n", r.out)

	b, err := os.ReadFile(filepath.Join(sb.Home(), "h.txt"))
	require.NoError(t, err)
	assert.Equal(t, "home\n", string(b))
	b, err = os.ReadFile(filepath.Join(sb.Workspace(), "w.txt"))
	require.NoError(t, err)
	assert.Equal(t, "ws\n", string(b))
}

func TestSandboxSeesOnlyAllowedFilesAndProcesses(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	r := runSh(t, sb, `ls -A /; echo ---; ls -A /etc; echo ---; ls /proc | grep -c '^[0-9]'; ls -A /sys 2>/dev/null | wc -l`)
	require.Equal(t, 0, r.code, r.out)
	parts := strings.Split(r.out, "---\n")
	require.Len(t, parts, 3, r.out)
	for _, name := range strings.Fields(parts[0]) {
		assert.Contains(t, []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "proc", "dev", "etc", "tmp", "workspace"}, name, "unexpected entry in /")
	}
	for _, name := range strings.Fields(parts[1]) {
		assert.Contains(t, []string{"resolv.conf", "hosts", "nsswitch.conf", "host.conf", "gai.conf", "ssl", "ca-certificates",
			"pki", "crypto-policies", "ld.so.cache", "localtime", "alternatives", "passwd", "group"}, name, "unexpected entry in /etc")
	}
	counts := strings.Fields(parts[2])
	require.Len(t, counts, 2, r.out)
	n, err := strconv.Atoi(counts[0])
	require.NoError(t, err)
	assert.LessOrEqual(t, n, 4, "processes visible: bwrap, sh and the pipeline only")
	assert.Equal(t, "0", counts[1], "/sys must be absent or empty")
}

// The host's /etc/localtime, a link into /usr/share/zoneinfo on Debian, is
// the same link inside: a copy would hold the zone's rules without its
// name, which ICU then looks for by reading every zone file at each
// process's start.
func TestSandboxLocaltimeIsTheHostsLink(t *testing.T) {
	needBwrap(t)
	target, err := os.Readlink("/etc/localtime")
	if err != nil {
		t.Skipf("the host's /etc/localtime is not a link (%v): the sandbox copies it", err)
	}
	want, err := os.ReadFile("/etc/localtime")
	require.NoError(t, err)
	sb := openSandbox(t, Policy{})
	r := runSh(t, sb, `readlink /etc/localtime && cat /etc/localtime`)
	require.Equal(t, 0, r.code, r.out)
	link, zone, _ := strings.Cut(r.out, "\n")
	assert.Equal(t, target, link)
	assert.Equal(t, string(want), zone, "the link leads to the host's zone file")
}

// A memory directory is a bounded tmpfs of each command's own: what is
// written there never reaches the host's per-agent directory, the next
// command starts with it empty, and it cannot grow past its size.
func TestSandboxMemoryDirIsPrivateAndBounded(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{MemoryDirs: map[string]int64{"scratch": 1 << 20}})
	r := runSh(t, sb, `echo kept > /tmp/scratch/f; stat -f -c %T /tmp/scratch
		head -c 2000000 /dev/zero > /tmp/scratch/big && echo unbounded || echo full`)
	require.Equal(t, 0, r.code, r.out)
	assert.True(t, strings.HasPrefix(r.out, "tmpfs\n"), r.out)
	assert.True(t, strings.HasSuffix(r.out, "full\n"), "the directory outgrew its size: %s", r.out)
	entries, err := os.ReadDir(filepath.Join(sb.Home(), "scratch"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the memory directory's files reached the host")
	r = runSh(t, sb, `ls -A /tmp/scratch`)
	require.Equal(t, 0, r.code, r.out)
	assert.Empty(t, r.out, "a command saw the last command's memory directory")

	for _, dirs := range []map[string]int64{{"a/b": 1 << 20}, {"..": 1 << 20}, {"": 1 << 20}, {".shm": 1 << 20}, {"a": 0}} {
		_, err := New(t.Context(), Policy{MemoryDirs: dirs})
		assert.Error(t, err, "memory directories %v", dirs)
	}
}

func TestSandboxEnvironmentIsOnlyThePolicy(t *testing.T) {
	needBwrap(t)
	hostSecret := newMarker(t, "hostenv")
	t.Setenv("PAIRBENCH_TEST_HOST_SECRET", hostSecret)
	agentKey := newMarker(t, "agentkey")
	sb := openSandbox(t, Policy{Env: map[string]string{"ANTHROPIC_API_KEY": agentKey}})
	c := sb.Command(t.Context(), "/usr/bin/env")
	c.Env = map[string]string{"EXTRA": "1"}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	require.NoError(t, c.Run(), out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.ElementsMatch(t, []string{
		"ANTHROPIC_API_KEY=" + agentKey, "EXTRA=1", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8",
		"PATH=/usr/local/bin:/usr/bin:/bin", "PWD=/workspace", // PWD: set by bubblewrap's --chdir
	}, lines, "the init's own GOMAXPROCS=1 is not the command's")
	assert.NotContains(t, out.String(), hostSecret)

	// A GOMAXPROCS of the command's own reaches it as given.
	c = sb.Command(t.Context(), "/bin/sh", "-c", `echo "$GOMAXPROCS"`)
	c.Env = map[string]string{"GOMAXPROCS": "3"}
	out.Reset()
	c.Stdout, c.Stderr = &out, &out
	require.NoError(t, c.Run(), out.String())
	assert.Equal(t, "3\n", out.String())
}

func TestSandboxRefusesNULInValues(t *testing.T) {
	needBwrap(t)
	smuggled := "a\x00--bind\x00/\x00/host"
	_, err := New(t.Context(), Policy{Env: map[string]string{"X": smuggled}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NUL")
	_, err = New(t.Context(), Policy{Env: map[string]string{"BAD NAME": "x"}})
	assert.ErrorContains(t, err, "bad environment variable name")

	sb := openSandbox(t, Policy{})
	c := sb.Command(t.Context(), "/bin/true")
	c.Env = map[string]string{"X": smuggled}
	assert.ErrorContains(t, c.Run(), "NUL")
	assert.ErrorContains(t, sb.Command(t.Context(), "/bin/echo", smuggled).Run(), "NUL")
}

func TestSandboxReadOnlyProgramsWithoutTheirPrefix(t *testing.T) {
	needBwrap(t)
	prefix := sharedDir(t) // stands for ~/.local
	bin := filepath.Join(prefix, "bin", "tool")
	pkg := filepath.Join(prefix, "lib", "node_modules", "agent")
	secret := newMarker(t, "prefix")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\necho tool ran\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "cli.js"), []byte("package file\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(prefix, "bin", "other"), []byte(secret), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(prefix, "lib", "node_modules", "sibling.txt"), []byte(secret), 0o644))

	sb := openSandbox(t, Policy{ReadOnly: []string{bin, pkg}})
	r := runSh(t, sb, bin+"; cat "+pkg+"/cli.js; cat "+prefix+"/bin/other "+prefix+"/lib/node_modules/sibling.txt; ls "+prefix+"/bin; echo x > "+pkg+"/w")
	assert.Contains(t, r.out, "tool ran\npackage file\n")
	assert.NotContains(t, r.out, secret)
	assert.NotContains(t, r.out, "other\n")
	assert.NotEqual(t, 0, r.code)
	_, err := os.Stat(filepath.Join(pkg, "w"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "write through a read-only program mount")
}

func TestCheckReadOnlyRefusesPrefixesAndSystemDirs(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755))
	for _, p := range []string{"/", "/etc", "/usr", "/usr/local", "/opt", "/tmp", home, filepath.Dir(home), filepath.Join(home, ".local")} {
		assert.Error(t, checkReadOnly(p, home), "checkReadOnly(%q) accepted", p)
	}
	assert.Error(t, checkReadOnly("relative/path", home))
	assert.Error(t, checkReadOnly(filepath.Join(home, "missing"), home))
	assert.NoError(t, checkReadOnly(filepath.Join(home, ".local", "bin"), home))
}

func TestSandboxCloseKillsEverythingAndRemovesTheDirectory(t *testing.T) {
	needBwrap(t)
	sb, err := New(t.Context(), Policy{})
	require.NoError(t, err)
	marker := "8123.25" // a sleep length no other process uses
	c := sb.Command(t.Context(), "/bin/sh", "-c", "sleep "+marker+" & sleep "+marker+"; wait")
	require.NoError(t, c.Start())
	waitForProcess(t, marker, true)

	require.NoError(t, sb.Close())
	assert.Error(t, c.Wait(), "the command was killed")
	waitForProcess(t, marker, false)
	_, err = os.Stat(filepath.Dir(sb.Home()))
	assert.True(t, errors.Is(err, os.ErrNotExist), "per-agent directory removed")
	assert.NoError(t, sb.Close(), "Close twice")
	assert.Error(t, sb.Command(t.Context(), "/bin/true").Start(), "Start after Close")
}

func TestSandboxContextCancelKillsEverything(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	ctx, cancel := context.WithCancel(t.Context())
	marker := "8124.5"
	c := sb.Command(ctx, "/bin/sh", "-c", "sleep "+marker+" & sleep "+marker+"; wait")
	require.NoError(t, c.Start())
	waitForProcess(t, marker, true)
	cancel()
	assert.Error(t, c.Wait())
	waitForProcess(t, marker, false)
}

// TestCancelDuringSetupLeavesNothing cancels commands while bubblewrap is
// still setting the sandbox up, at spread-out moments: no process of
// theirs may be left, not even a PID 1 stranded in its setup.
func TestCancelDuringSetupLeavesNothing(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	marker := "8127.125"
	for i := range 60 {
		ctx, cancel := context.WithCancel(t.Context())
		c := sb.Command(ctx, "/bin/sleep", marker)
		go func() {
			time.Sleep(time.Duration(i%20) * 250 * time.Microsecond)
			cancel()
		}()
		if c.Start() == nil {
			c.Wait()
		}
		cancel()
	}
	require.Eventually(t, func() bool { return !anyProcessWith(marker) }, 5*time.Second, 20*time.Millisecond,
		"a process of a cancelled sandbox is left")
}

// anyProcessWith reports whether any process's command line holds marker.
func anyProcessWith(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}

func TestKillingTheLauncherEndsTheSandbox(t *testing.T) {
	needBwrap(t)
	t.Run("the command's own death signal", func(t *testing.T) { killLauncher(t, "launch", "8125.75") })
	// The agent may drop its own parent-death signal: the sandbox still
	// ends with its launcher, through its PID 1, which it cannot touch.
	t.Run("the command drops its death signal", func(t *testing.T) { killLauncher(t, "launch-clear", "8125.5") })
}

// killLauncher starts the escape helper's launch action as a launcher on
// the host, kills it with SIGKILL and waits for its sandbox's sleeps to go.
func killLauncher(t *testing.T, action, marker string) {
	exe := testBinary(t) // mounted into the sandbox by launch-clear
	launcher := exec.Command(exe, escapeArg, action, marker, sharedDir(t))
	out, err := launcher.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, launcher.Start())
	line := make([]byte, 64)
	n, err := out.Read(line) // "started" once the sandbox is up
	require.NoError(t, err)
	require.Equal(t, "started\n", string(line[:n]))
	waitForProcess(t, marker, true)

	require.NoError(t, launcher.Process.Signal(syscall.SIGKILL))
	launcher.Wait()
	waitForProcess(t, marker, false)
}

// waitForProcess waits up to 5 s until a sleep process whose command line
// contains marker exists (want true) or none does (want false).
func waitForProcess(t *testing.T, marker string, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if found := processWith(marker); found == want || time.Now().After(deadline) {
			require.Equal(t, want, found, "process with %q running", marker)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processWith reports whether a sleep with marker in its arguments runs.
func processWith(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.HasPrefix(b, []byte("sleep\x00")) && bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}

func TestSandboxTmpSize(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{Limits: Limits{TmpSize: 1 << 20}})
	require.NoError(t, os.Mkdir(filepath.Join(sb.Home(), "config"), 0o700))
	r := runSh(t, sb, `test -d /tmp/config && echo config-visible
		head -c 2097152 /dev/zero > /tmp/big; echo "rc=$?"`)
	assert.Contains(t, r.out, "config-visible")
	assert.Contains(t, r.out, "No space left on device")
	assert.NotContains(t, r.out, "rc=0")
}

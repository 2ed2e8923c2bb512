package sandbox

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// The adversarial tests run twice: as the process they are started in (root
// in this project's CI, a root launcher) and as an unprivileged launcher.
// For the second, a root test process re-executes itself, for that one
// test, under testLauncherUID, a uid no account uses; an unprivileged test
// process already is one, and skips the root run, saying so.

// testLauncherUID is the unprivileged launcher a root test process becomes.
// It is outside DefaultUIDs, so its sandboxes (which run as itself) never
// share an id with a root launcher's.
const testLauncherUID = 0x6F000000

// unprivilegedEnv marks the re-executed test process.
const unprivilegedEnv = "PAIRBENCH_TEST_UNPRIVILEGED_LAUNCHER"

// eachLauncher runs body as a root launcher and as an unprivileged one.
func eachLauncher(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	if os.Getenv(unprivilegedEnv) != "" {
		body(t) // this is the re-executed, unprivileged run
		return
	}
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skipf("a root launcher needs root; this test process runs as uid %d (the unprivileged run below is this host's)", os.Geteuid())
		}
		body(t)
	})
	t.Run("unprivileged", func(t *testing.T) {
		if os.Geteuid() != 0 {
			body(t)
			return
		}
		runUnprivileged(t)
	})
}

// runUnprivileged re-executes this test binary as testLauncherUID to run
// the current top-level test, and fails t with its output when it fails.
// The binary is executed from a descriptor: its build directory is
// root's own and not reachable by that uid.
func runUnprivileged(t *testing.T) {
	t.Helper()
	self, err := os.Open("/proc/self/exe")
	require.NoError(t, err)
	defer self.Close()
	home := ownedDir(t, testLauncherUID)
	tmp := ownedDir(t, testLauncherUID)
	top := t.Name()
	if i := bytes.IndexByte([]byte(top), '/'); i >= 0 {
		top = top[:i]
	}
	// -test.v always: the verdict is read from the child's result lines.
	args := []string{"-test.run", "^" + top + "$", "-test.count", "1", "-test.v"}
	if f := flag.Lookup("test.short"); f != nil && f.Value.String() == "true" {
		args = append(args, "-test.short")
	}
	deadline, ok := t.Deadline()
	timeout := 10 * time.Minute
	if ok {
		timeout = time.Until(deadline) - 5*time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/fd/3", args...)
	cmd.ExtraFiles = []*os.File{self}
	wd, err := os.Getwd()
	require.NoError(t, err)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1", "HOME="+home, "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: testLauncherUID, Gid: testLauncherUID, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err != nil {
		t.Fatalf("as an unprivileged launcher (uid %d): %v\n%s", testLauncherUID, err, out.String())
	}
	if testing.Verbose() {
		t.Logf("as an unprivileged launcher (uid %d):\n%s", testLauncherUID, out.String())
	}
	switch verdict, detail := childVerdict(out.Bytes(), top); verdict {
	case "skip":
		// Say so: an unprivileged run that skipped (bubblewrap refused a
		// user namespace to that uid) proves nothing about that launcher.
		t.Skipf("as an unprivileged launcher (uid %d) the test skipped:\n%s", testLauncherUID, detail)
	case "missing":
		t.Fatalf("as an unprivileged launcher (uid %d) the test did not run:\n%s", testLauncherUID, out.String())
	}
}

// childVerdict reads go test -v output for top's own result: "pass",
// "skip" with the lines that say why, or "missing".
func childVerdict(out []byte, top string) (verdict, detail string) {
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "--- PASS: "+top+" "):
			return "pass", ""
		case strings.HasPrefix(l, "--- SKIP: "+top+" "):
			var why []string
			for _, r := range lines[i+1:] {
				if !strings.HasPrefix(r, "    ") {
					break
				}
				why = append(why, strings.TrimSpace(r))
			}
			return "skip", strings.Join(why, "\n")
		}
	}
	return "missing", ""
}

// sharedDir returns a fresh directory every user may enter (see
// sandboxtest.TempDir).
func sharedDir(t testing.TB) string { return sandboxtest.TempDir(t) }

// ownedDir returns a fresh directory under the host's /tmp owned by uid
// (when this process may give it away), removed when the test ends.
func ownedDir(t testing.TB, uid int) string {
	t.Helper()
	dir := sharedDir(t)
	require.NoError(t, os.Chmod(dir, 0o700))
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(dir, uid, uid))
	}
	return dir
}

// giveTo hands paths to uid, when this process may give them away.
func giveTo(t testing.TB, uid int, paths ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	for _, p := range paths {
		require.NoError(t, os.Lchown(p, uid, uid))
	}
}

var (
	testBinaryOnce sync.Once
	testBinaryPath string
	testBinaryErr  error
)

// testBinary returns a copy of this test binary that every user may
// execute, for tests that run it inside a sandbox (mounted read-only): the
// build directory of the original is the test user's alone. TestMain
// removes it.
func testBinary(t testing.TB) string {
	t.Helper()
	testBinaryOnce.Do(func() {
		dir, err := os.MkdirTemp("/tmp", "pairbench-test-bin-")
		if err != nil {
			testBinaryErr = err
			return
		}
		os.Chmod(dir, 0o755)
		in, err := os.Open("/proc/self/exe")
		if err != nil {
			testBinaryErr = err
			return
		}
		defer in.Close()
		path := filepath.Join(dir, "sandbox.test")
		out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
		if err != nil {
			testBinaryErr = err
			return
		}
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		testBinaryPath, testBinaryErr = path, err
	})
	require.NoError(t, testBinaryErr)
	return testBinaryPath
}

// removeTestBinary removes testBinary's copy, if one was made.
func removeTestBinary() {
	if testBinaryPath != "" {
		os.RemoveAll(filepath.Dir(testBinaryPath))
	}
}

// Package sandboxtest gives tests of sandboxed code what a root launcher's
// sandboxes need from the host: their processes run as unprivileged users
// of their own, who must be able to reach the directories the test hands
// them (t.TempDir's parent is the test user's alone).
package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TempDir returns a fresh directory under the host's /tmp that every user
// may enter and read (mode 0755), removed when the test ends: a TempRoot, a
// --temp-dir, an egress TempDir, a program directory to mount read-only.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pairbench-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// InitProgram builds pairbench-sandbox-init as make build and the Action
// build it (without cgo) into a directory removed when the test ends, for
// tests and benchmarks that start their sandboxes as an installed pairbench
// does (sandbox.Policy.Executable).
func InitProgram(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "pairbench-sandbox-init")
	cmd := exec.Command("go", "build", "-o", path, "github.com/pairbench/pairbench/cmd/pairbench-sandbox-init")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build pairbench-sandbox-init: %v: %s", err, out)
	}
	return path
}

package action

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestActionCachesItsBuild: the Action names the build of its own sources
// (key.sh), hands that key and the binaries' directory to actions/cache,
// and skips Go and the build when the cache restored them; a job without
// a hit builds as before. The key changes with the sources.
func TestActionCachesItsBuild(t *testing.T) {
	meta, err := readActionMeta(filepath.Join(root, "action.yml"))
	require.NoError(t, err)
	abs, err := filepath.Abs(root)
	require.NoError(t, err)

	// A job whose cache restored the build: the binaries are there before
	// the build step (a link to one this test builds once).
	tmp := t.TempDir()
	binDir := filepath.Join(tmp, "restored")
	require.NoError(t, os.MkdirAll(binDir, 0o755))
	for _, c := range []struct{ out, pkg string }{{"pairbench", "./cmd/pairbench"}, {"pairbench-sandbox-init", "./cmd/pairbench-sandbox-init"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, c.out), c.pkg)
		cmd.Dir = abs
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	res, err := runJob(meta, job{Root: abs, Work: abs, Env: map[string]string{"GITHUB_REPOSITORY": repoName, "GITHUB_RUN_ID": "1"},
		Inputs: map[string]string{"mode": "report", "run-dir": filepath.Join(abs, "examples", "runs", "demo")},
		Skip:   map[string]string{"Install what the runner lacks": "not needed to report"},
		Built:  binDir}, t.TempDir())
	require.NoError(t, err)
	key := res.step("Key the pairbench build")
	require.True(t, key.Ran)
	cache := res.step("Restore the pairbench build of these sources")
	assert.Equal(t, "actions/cache@5a3ec84eff668545956fd18022155c47e93e2684", cache.Uses)
	assert.Regexp(t, `^pairbench-bin-Linux-x86_64-[0-9a-f]{32}$`, cache.With["key"])
	assert.Equal(t, filepath.Join(res.Temp, "pairbench-action", "bin"), cache.With["path"], "the directory the build step fills")

	// build.sh itself: the restored binaries are used, Go is not run.
	pb := filepath.Join(binDir, "pairbench")
	cmd := exec.Command("bash", filepath.Join(abs, "action", "build.sh"))
	cmd.Env = append(os.Environ(), "GITHUB_ACTION_PATH="+abs, "RUNNER_TEMP="+t.TempDir(), "PB_BIN="+pb, "PATH=/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "using the cached build of this Action's sources", "no go on PATH, and none needed")

	// The key follows the sources.
	keyOf := func(dir string) string {
		outFile := filepath.Join(t.TempDir(), "out")
		require.NoError(t, os.WriteFile(outFile, nil, 0o644))
		cmd := exec.Command("bash", filepath.Join(dir, "action", "key.sh"))
		cmd.Env = append(os.Environ(), "GITHUB_ACTION_PATH="+dir, "RUNNER_TEMP="+t.TempDir(), "GITHUB_OUTPUT="+outFile)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		b, err := os.ReadFile(outFile)
		require.NoError(t, err)
		return strings.TrimSpace(strings.TrimPrefix(string(b), "key="))
	}
	copyDir := t.TempDir()
	for _, f := range []string{"action/key.sh", "action/lib.sh", "go.mod", "go.sum", "pairbench.go"} {
		b, err := os.ReadFile(filepath.Join(abs, f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(copyDir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(copyDir, f), b, 0o644))
	}
	before := keyOf(copyDir)
	assert.Equal(t, before, keyOf(copyDir), "the same sources, the same key")
	require.NoError(t, os.WriteFile(filepath.Join(copyDir, "pairbench.go"), []byte("package pairbench\n"), 0o644))
	assert.NotEqual(t, before, keyOf(copyDir), "other sources, another key")
}

// TestSetupRefusesTheSnapStub runs scripts/setup.sh as on an Ubuntu runner
// without Chromium: it refuses to install Ubuntu's chromium package (the
// snap's stub) and says what to install instead, before installing
// anything.
func TestSetupRefusesTheSnapStub(t *testing.T) {
	osRelease := filepath.Join(t.TempDir(), "os-release")
	require.NoError(t, os.WriteFile(osRelease, []byte("NAME=\"Ubuntu\"\nID=ubuntu\nVERSION_ID=\"24.04\"\n"), 0o644))
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "setup.sh"))
	cmd.Env = append(os.Environ(), "PAIRBENCH_OS_RELEASE="+osRelease, "PAIRBENCH_CHROMIUM=/nonexistent/chromium")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "setup: no Chromium at /nonexistent/chromium, and Ubuntu's chromium package installs the snap, which cannot run in pairbench's sandbox")
	assert.NotContains(t, string(out), "installing", "nothing was installed")
}

//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// TestInstalledBinaryFindsItsTools copies the real binary out of the
// checkout, as a team installs it, and plans a run from another directory:
// with the Node tools next to the binary, then named by $PAIRBENCH_TOOLS,
// and with Chromium given by --chromium (a link elsewhere). Without the
// tools anywhere, the error says where it looked and how to point at them;
// Ubuntu's snap stub as --chromium is refused before anything runs.
func TestInstalledBinaryFindsItsTools(t *testing.T) {
	tools := clitest.RealStack(t)
	inst := sandboxtest.TempDir(t) // the sandboxes' users read the tools through it
	bin := filepath.Join(inst, "pairbench")
	data, err := os.ReadFile(clitest.Build(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	reg, err := filepath.Abs(clitest.ExampleRegistry)
	require.NoError(t, err)
	work := t.TempDir() // the working directory: no tools/ here
	ctx := deadlineContext(t)
	plan := func(env []string, more ...string) (int, string) {
		t.Helper()
		args := append([]string{"run", reg, "--example-sites", "--intent", "weather-high-oslo", "--pairs", "1",
			"--allow-inconclusive", "--plan-only", "--runs-dir", t.TempDir()}, more...)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = work, append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, out.String()
	}

	code, out := plan(nil)
	assert.Equal(t, clitest.ExitFailure, code, out)
	assert.Contains(t, out, "is not installed in the pinned Node tools at "+filepath.Join(work, "tools", "node_modules"))
	assert.Contains(t, out, "--tools DIR or $PAIRBENCH_TOOLS, or keep tools/node_modules next to the pairbench binary")
	assert.NotContains(t, out, "make setup")

	code, out = plan([]string{"PAIRBENCH_TOOLS=" + tools})
	assert.Equal(t, clitest.ExitOK, code, "$PAIRBENCH_TOOLS: %s", out)

	require.NoError(t, os.MkdirAll(filepath.Join(inst, "tools"), 0o755))
	require.NoError(t, os.Symlink(tools, filepath.Join(inst, "tools", "node_modules")))
	chromium := filepath.Join(t.TempDir(), "my-chromium")
	require.NoError(t, os.Symlink(local.DefaultChromiumPath, chromium))
	code, out = plan(nil, "--chromium", chromium)
	assert.Equal(t, clitest.ExitOK, code, "tools next to the binary, --chromium: %s", out)

	stub := filepath.Join(t.TempDir(), "chromium-browser")
	require.NoError(t, os.WriteFile(stub, []byte("#!/bin/sh\necho \"Command '$0' requires the chromium snap to be installed.\" >&2\nexit 1\n"), 0o755))
	code, out = plan(nil, "--chromium", stub)
	assert.Equal(t, clitest.ExitFailure, code, out)
	assert.Contains(t, out, "is Ubuntu's snap Chromium (or the stub that installs it)")
}

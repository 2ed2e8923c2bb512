package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench/internal/fulldisk"
	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// smallTempEnv hands the unprivileged run of
// TestEscapeAgentFillsTheTempFileSystem the small filesystem its root
// parent mounted.
const smallTempEnv = "PAIRBENCH_TEST_SMALL_TEMP"

// TestEscapeAgentFillsTheTempFileSystem: an agent's sandbox, with the
// limits pairbench's agents run with (AgentLimits), writes all it can to
// /tmp, to the directory its configuration was written to before it
// started (bound in from the host when /tmp was capped, so not counted),
// to /workspace and to /dev/shm, on a runner whose temporary directory is
// a 32 MiB filesystem. Then the next trial's egress must still write its
// CA there and its sandbox start. On a4d171d (agents with no TmpSize, and
// TmpSize's entries bound in) the filesystem filled and the egress could
// not start: "no space left on device".
func TestEscapeAgentFillsTheTempFileSystem(t *testing.T) {
	needBwrap(t)
	small := os.Getenv(smallTempEnv)
	if small == "" {
		small = sandboxtest.TempDir(t)
		fulldisk.MountAt(t, small, 32<<20) // skips without root
		require.NoError(t, os.Chmod(small, 0o1777))
		t.Setenv(smallTempEnv, small)
	}
	eachLauncher(t, func(t *testing.T) {
		root, err := os.MkdirTemp(small, "runner-")
		require.NoError(t, err)
		require.NoError(t, os.Chmod(root, 0o755)) // a root launcher's sandbox users enter it
		t.Cleanup(func() { os.RemoveAll(root) })

		sb := openSandbox(t, Policy{TempRoot: root, Limits: AgentLimits})
		require.NoError(t, os.Mkdir(filepath.Join(sb.Home(), "config"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sb.Home(), "config", "settings.json"), []byte("{}"), 0o644))
		r := runSh(t, sb, `test -f /tmp/config/settings.json && echo config-copied
			for d in /tmp /tmp/config /workspace /dev/shm; do head -c 50000000 /dev/zero > $d/fill; done; echo filled`)
		require.Contains(t, r.out, "config-copied", "the configuration written before the start is inside")
		require.Contains(t, r.out, "filled", r.out)

		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(root, &st))
		assert.Greater(t, st.Bavail*uint64(st.Bsize), uint64(16<<20), "the agent took the runner's temporary directory")

		e, err := NewEgress(t.Context(), EgressConfig{TempDir: root})
		require.NoError(t, err, "the next trial's egress cannot write its CA")
		t.Cleanup(func() { e.Close() })
		next := openSandbox(t, Policy{TempRoot: root, Egress: e, Limits: AgentLimits})
		assert.Contains(t, runSh(t, next, `echo ok > /tmp/x && cat /tmp/x`).out, "ok")
	})
}

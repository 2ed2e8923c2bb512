package sandbox

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEscapeLimits: every sandbox runs with limits, a delegated cgroup's
// where there is one and per-process rlimits in any case, and says which.
// A fork bomb stops at the process limit, a greedy process at the memory
// limit, a huge file at the file-size limit; none of them touches the host.
func TestEscapeLimits(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		bin := testBinary(t)
		sb := openSandbox(t, Policy{ReadOnly: []string{bin}}) // the defaults
		t.Logf("limits: %s", sb.LimitsReport())
		assert.NotEmpty(t, sb.LimitsReport())

		r := runSh(t, sb, `grep -E '^Max (processes|data size|file size|core file size) ' /proc/self/limits`)
		require.Equal(t, 0, r.code, r.out)
		want := map[string]string{
			"Max processes":      strconv.Itoa(DefaultLimits.Pids),
			"Max data size":      strconv.FormatInt(DefaultLimits.Memory, 10),
			"Max file size":      strconv.FormatInt(DefaultLimits.FileSize, 10),
			"Max core file size": "0",
		}
		for _, line := range strings.Split(strings.TrimSpace(r.out), "\n") {
			for name, v := range want {
				if strings.HasPrefix(line, name+" ") {
					assert.Equal(t, v, strings.Fields(strings.TrimPrefix(line, name))[0], line)
					delete(want, name)
				}
			}
		}
		assert.Empty(t, want, "limits missing from /proc/self/limits:\n%s", r.out)

		// A fork bomb: 800 sleeps, counted from inside.
		// Counted with the shell's own glob: at the limit nothing can fork.
		r = runSh(t, sb, `(i=0; while [ $i -lt 800 ]; do sleep 30 & i=$((i+1)); done) 2>/dev/null; set -- /proc/[0-9]*; echo "$#"`)
		n, err := strconv.Atoi(strings.TrimSpace(r.out[strings.LastIndex(strings.TrimSpace(r.out), "\n")+1:]))
		require.NoError(t, err, r.out)
		assert.LessOrEqual(t, n, DefaultLimits.Pids, "processes inside")

		// Threads count as processes: 800 of them in one process.
		r = runSh(t, sb, bin+" "+escapeArg+" threads 800 2>&1 | tail -3")
		assert.NotContains(t, r.out, "threads 800", "800 threads under a %d-process limit", DefaultLimits.Pids)

		small := openSandbox(t, Policy{ReadOnly: []string{bin}, Limits: Limits{Memory: 128 << 20, FileSize: 1 << 20}})
		r = runSh(t, small, bin+" "+escapeArg+" alloc 512")
		assert.NotEqual(t, 0, r.code, "512 MiB allocated under a 128 MiB limit: %s", r.out)
		assert.NotContains(t, r.out, "allocated 512")
		r = runSh(t, small, `head -c 4M /dev/zero > /tmp/big; ls -l /tmp/big`)
		assert.Contains(t, r.out, " 1048576 ", "a file grew past the file-size limit: %s", r.out)
	})
}

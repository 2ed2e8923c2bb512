package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeCgroupParent lays out the files of a cgroup v2 directory in a plain
// directory, for the parts of createCgroup that only read and write files.
func fakeCgroupParent(t *testing.T, controllers string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(controllers+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), nil, 0o644))
	return dir
}

func TestCreateCgroupWritesLimits(t *testing.T) {
	parent := fakeCgroupParent(t, "cpuset cpu io memory pids")
	cg, err := createCgroup(cgroupHost{}, Limits{Memory: 256 << 20, Pids: 64, CPU: 0.5, Parent: parent})
	require.NoError(t, err)
	defer cg.dir.Close()
	read := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "+cpu +memory +pids", read(filepath.Join(parent, "cgroup.subtree_control")))
	assert.Equal(t, filepath.Dir(cg.path), parent)
	assert.Equal(t, "268435456", read(filepath.Join(cg.path, "memory.max")))
	assert.Equal(t, "0", read(filepath.Join(cg.path, "memory.swap.max")))
	assert.Equal(t, "64", read(filepath.Join(cg.path, "pids.max")))
	assert.Equal(t, "50000 100000", read(filepath.Join(cg.path, "cpu.max")))
}

func TestCreateCgroupExplainsMissingDelegation(t *testing.T) {
	parent := fakeCgroupParent(t, "hugetlb")
	_, err := createCgroup(cgroupHost{}, Limits{Memory: 1 << 30, Parent: parent})
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.Reason, "controller memory not delegated to "+parent+" (it has: hugetlb)")
	assert.Contains(t, ue.Reason, "docs/sandbox.md")
	assert.NotContains(t, err.Error(), "\n")
}

// TestLimitsOnThisHost applies real limits: a cgroup's where the host
// delegates one, rlimits alone otherwise, as the report says. A Parent
// named explicitly must be usable, or New says why.
func TestLimitsOnThisHost(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{Limits: Limits{Pids: 16, Memory: 256 << 20}})
	t.Logf("limits: %s", sb.LimitsReport())
	if sb.cg == nil {
		assert.True(t, strings.HasPrefix(sb.LimitsReport(), "rlimits only (memory 256 MiB, 16 processes and threads"), sb.LimitsReport())
	} else {
		assert.True(t, strings.HasPrefix(sb.LimitsReport(), "cgroup "), sb.LimitsReport())
	}
	r := runSh(t, sb, `(for i in $(seq 40); do sleep 5 & done) 2>/dev/null; set -- /proc/[0-9]*; echo "$#"`)
	n, err := strconv.Atoi(strings.TrimSpace(r.out))
	require.NoError(t, err, r.out)
	assert.LessOrEqual(t, n, 16, "the process limit held")

	_, err = New(t.Context(), Policy{Limits: Limits{Parent: filepath.Join(t.TempDir(), "not-a-cgroup")}})
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue, "an explicit Parent that cannot be used is an error")
	assert.True(t, strings.HasPrefix(err.Error(), "sandbox: resource limits unavailable: "), err.Error())
}

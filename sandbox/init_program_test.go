package sandbox

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// initProgramEnv passes the built InitProgram to the unprivileged run.
const initProgramEnv = "PAIRBENCH_TEST_INIT_PROGRAM"

// builtInitProgram builds InitProgram once per test, where every user may
// read it, and hands it to the unprivileged run of eachLauncher.
func builtInitProgram(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(initProgramEnv); p != "" {
		return p
	}
	path := filepath.Join(sharedDir(t), InitProgram)
	require.NoError(t, os.Rename(sandboxtest.InitProgram(t), path))
	t.Setenv(initProgramEnv, path)
	return path
}

// TestInitProgramIsTheInit runs commands under the init program as a
// sandbox's PID 1, with an egress relay: the command's status and output
// come back, and PID 1 is the program, undumpable (its environment
// unreadable from inside).
func TestInitProgramIsTheInit(t *testing.T) {
	needBwrap(t)
	prog := builtInitProgram(t)
	eachLauncher(t, func(t *testing.T) {
		e := startEgress(t, EgressConfig{
			Allow:    []AllowRule{{Host: "model.test", Ports: []int{443}}},
			Resolver: mapResolver{"model.test": {netip.MustParseAddr("192.0.2.1")}},
		})
		sb, err := New(t.Context(), Policy{Executable: prog, Egress: e})
		require.NoError(t, err)
		defer sb.Close()

		out, err := combined(sb.Command(t.Context(), "sh", "-c",
			`tr '\0' ' ' </proc/1/cmdline; echo; cat /proc/1/environ >/dev/null 2>&1 && echo environ-readable; echo "$HTTPS_PROXY"; exit 7`))
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, out)
		assert.Equal(t, 7, exit.ExitCode(), out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, out)
		assert.Contains(t, lines[0], InitArg+" -forward ", "PID 1 is the init relaying the egress")
		assert.NotEmpty(t, lines[1], "the egress's variables reach the command")
		assert.NotContains(t, lines, "environ-readable", "PID 1's environment is unreadable")
	})
}

// TestInitProgramIsTrustedOnlyFromTheSameBuild checks which InitProgram
// beside a binary stands in for it: only one of the binary's owner that
// nobody else may change, that speaks the same init protocol.
func TestInitProgramIsTrustedOnlyFromTheSameBuild(t *testing.T) {
	if os.Getenv(initProgramEnv) == "" && testing.Short() {
		t.Skip("builds pairbench-sandbox-init; skipped with -short")
	}
	prog := sandboxtest.InitProgram(t)
	dir := filepath.Dir(prog)
	self := filepath.Join(dir, "pairbench")
	require.NoError(t, os.WriteFile(self, nil, 0o755))

	f, err := openInitProgram(self)
	require.NoError(t, err, "the program of this build, beside the binary")
	f.Close()

	require.NoError(t, os.Chmod(prog, 0o775))
	_, err = openInitProgram(self)
	assert.ErrorContains(t, err, "owner's alone", "a program its group may write")
	require.NoError(t, os.Chmod(prog, 0o755))

	require.NoError(t, os.Chmod(dir, 0o777))
	_, err = openInitProgram(self)
	assert.ErrorContains(t, err, "writable by others", "in a directory anyone may write")
	require.NoError(t, os.Chmod(dir, 0o755))

	other := filepath.Join(t.TempDir(), "pairbench")
	require.NoError(t, os.WriteFile(other, nil, 0o755))
	_, err = openInitProgram(other)
	assert.ErrorIs(t, err, os.ErrNotExist, "none beside the binary")

	// Another build's init: a program answering with another protocol.
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho 0123456789abcdef\n"), 0o755))
	_, err = openInitProgram(self)
	assert.ErrorContains(t, err, "another build")
}

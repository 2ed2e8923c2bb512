package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckPassesOnThisHost(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		wd, err := os.Getwd()
		require.NoError(t, err)
		rep, err := Check(t.Context(), CheckOptions{Hidden: []string{filepath.Dir(wd)}, TempRoot: sharedDir(t)})
		require.NoError(t, err)
		t.Logf("limits: %s; devices: %s; init: %s", rep.Limits, rep.Devices, rep.Init)
		assert.Contains(t, rep.Limits, "512 processes and threads", "the default limits are in force")
		assert.Contains(t, rep.Init, "the running binary, slower to start than "+InitProgram, "no init program beside a test binary")
		if os.Geteuid() == 0 {
			assert.Equal(t, "read-only binds from /run/pairbench/dev", rep.Devices)
			assert.Contains(t, rep.Shared, "nothing per user")
		} else {
			assert.Contains(t, rep.Devices, "writable binds of the host's")
			assert.Contains(t, rep.Shared, "at most 16 inotify instances", "what an unprivileged launcher cannot isolate is said")
			assert.Contains(t, rep.Shared, "pending signals")
		}
	})
}

func TestCheckFailsClosed(t *testing.T) {
	t.Run("bubblewrap missing", func(t *testing.T) {
		_, err := Check(t.Context(), CheckOptions{Bwrap: filepath.Join(sharedDir(t), "bwrap")})
		var ce *CheckError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, ce.Reason, "bubblewrap is not installed")
		assert.NotContains(t, ce.Reason, "\n")
	})
	t.Run("user namespaces refused", func(t *testing.T) {
		// What bwrap prints where the kernel refuses it a user namespace
		// (this host allows them, so a stand-in says it).
		fake := filepath.Join(sharedDir(t), "bwrap")
		require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755))
		_, err := Check(t.Context(), CheckOptions{Bwrap: fake, TempRoot: sharedDir(t)})
		var ce *CheckError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, ce.Reason, "kernel.apparmor_restrict_unprivileged_userns=0")
		assert.NotContains(t, ce.Reason, "\n")
	})
	t.Run("a hidden path is visible", func(t *testing.T) {
		needBwrap(t)
		// The sandbox has a root and a /tmp of its own: only /usr/bin is the
		// host's own directory inside.
		_, err := Check(t.Context(), CheckOptions{Hidden: []string{"/", "/tmp", "/usr/bin", "/nonexistent"}, TempRoot: sharedDir(t)})
		var ce *CheckError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "a sandbox can see what it must not: visible: /usr/bin", ce.Reason)
	})
}

package local

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/sandbox"
)

// TestCheckPassesForAConfinedBrowser: and, passing, it logs no warning (its
// own refused probe used to be one, and Chromium's calls to
// update.googleapis.com two more): pairbench sandbox check and every run's
// smoke gate print what it logs.
func TestCheckPassesForAConfinedBrowser(t *testing.T) {
	site := testsite.New(t)
	var log bytes.Buffer
	err := Check(t.Context(), Config{Hosts: site.Hosts(), Resolver: testsite.Resolver, TempDir: sandboxtest.TempDir(t),
		Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	assert.Empty(t, log.String(), "a passing check warns")
}

func TestCheckFailsClearlyWithoutChromium(t *testing.T) {
	err := Check(t.Context(), Config{ChromiumPath: "/nonexistent/chromium"})
	var ce *sandbox.CheckError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Contains(t, ce.Reason, "/nonexistent/chromium")
}

// TestInspectFindsAnUnconfinedChromium points the check's inspection at a
// Chromium started the way pairbench used to start it (no sandbox but its
// own network namespace, without a route out): it must name what is wrong.
func TestInspectFindsAnUnconfinedChromium(t *testing.T) {
	realstack.Need(t, realstack.Chromium)
	// unshare --fork stays the parent of Chromium, as bubblewrap does.
	unshare := []string{"unshare", "--fork", "--kill-child", "--net"}
	if os.Geteuid() != 0 {
		unshare = []string{"unshare", "--fork", "--kill-child", "--map-root-user", "--net"}
	}
	profile := t.TempDir()
	cmd := exec.Command(unshare[0], append(unshare[1:], DefaultChromiumPath, "--headless", "--no-sandbox",
		"--disable-gpu", "--user-data-dir="+profile, "--remote-debugging-port=0", "data:text/html,<p>x</p>")...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopNetns(t, cmd, profile) })
	self, err := procNamespaces(os.Getpid())
	require.NoError(t, err)
	var problems []string
	require.Eventually(t, func() bool {
		problems = inspect(cmd.Process.Pid, self)
		return slices.ContainsFunc(processTree(cmd.Process.Pid), func(pid int) bool {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			return strings.Contains(string(cmdline), "--type=renderer")
		})
	}, testsite.Patience, 100*time.Millisecond, "Chromium started a renderer")
	problems = inspect(cmd.Process.Pid, self)
	text := strings.Join(problems, "; ")
	for _, want := range []string{
		"runs without a seccomp filter", "shares the host's mnt namespace",
		"shares the host's pid namespace", "no renderer runs in Chromium's own sandbox", "the browser sees the host's /etc/",
		"in its environment",
	} {
		assert.Contains(t, text, want)
	}
	if os.Geteuid() == 0 {
		assert.Contains(t, text, "runs as the host's root")
	}
}

// stopNetns kills every process in the network namespace cmd made (cmd,
// the Chromium below it, and what Chromium left to init, such as its
// crash handler), waits until none is left and removes profile. Chromium
// and its helpers are in no other namespace of the test's, so nothing else
// is touched; a cmd still in the test's own namespace is killed alone.
func stopNetns(t *testing.T, cmd *exec.Cmd, profile string) {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
	self, _ := os.Readlink("/proc/self/ns/net")
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil || link == self {
		return
	}
	for deadline := time.Now().Add(testsite.Patience); ; time.Sleep(20 * time.Millisecond) {
		left := netnsProcesses(link)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes %v of the test's Chromium outlived it", left)
			return
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	assert.NoError(t, os.RemoveAll(profile))
}

// netnsProcesses returns the live processes in the network namespace link
// names (as /proc/PID/ns/net reads).
func netnsProcesses(link string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && l == link {
			if st, err := procStatus(pid); err == nil && !strings.HasPrefix(st["State"], "Z") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestSnapChromiumIsRefused gives the provider Ubuntu's chromium stub (a
// script that asks for the snap) and the snap's own launcher (a link to
// snap): each is refused, saying what to install instead.
func TestSnapChromiumIsRefused(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "chromium-browser")
	require.NoError(t, os.WriteFile(stub, []byte("#!/bin/sh\n# Ubuntu's transitional package\nif ! [ -x /snap/bin/chromium ]; then\n  echo \"Command '$0' requires the chromium snap to be installed.\" >&2\n  exit 1\nfi\nexec /snap/bin/chromium \"$@\"\n"), 0o755))
	snap := filepath.Join(dir, "snap")
	require.NoError(t, os.WriteFile(snap, []byte("\x7fELF"), 0o755))
	launcher := filepath.Join(dir, "chromium")
	require.NoError(t, os.Symlink(snap, launcher))
	for _, p := range []string{stub, launcher} {
		_, err := New(Config{ChromiumPath: p})
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "is Ubuntu's snap Chromium (or the stub that installs it), which cannot run in pairbench's sandbox", p)
		assert.Contains(t, err.Error(), "--chromium PATH", p)
	}
	assert.NoError(t, CheckBinary(DefaultChromiumPath), "Debian's Chromium")
}

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/sandbox"
)

func TestCheckPassesForAConfinedBrowser(t *testing.T) {
	site := newTestSite(t)
	err := Check(t.Context(), Config{Hosts: site.hosts(), Resolver: testResolver, TempDir: shortTempDir(t)})
	require.NoError(t, err)
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
	// unshare --fork stays the parent of Chromium, as bubblewrap does.
	unshare := []string{"unshare", "--fork", "--kill-child", "--net"}
	if os.Geteuid() != 0 {
		unshare = []string{"unshare", "--fork", "--kill-child", "--map-root-user", "--net"}
	}
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare[0], append(unshare[1:], DefaultChromiumPath, "--headless", "--no-sandbox",
		"--disable-gpu", "--user-data-dir="+profile, "--remote-debugging-port=0", "data:text/html,<p>x</p>")...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		pids := processTree(cmd.Process.Pid)
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
		// The profile goes once no process of that browser writes to it.
		for range 100 {
			if !slices.ContainsFunc(pids, func(pid int) bool { return len(processTree(pid)) > 0 }) && os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	self, err := procNamespaces(os.Getpid())
	require.NoError(t, err)
	var problems []string
	require.Eventually(t, func() bool {
		problems = inspect(cmd.Process.Pid, self)
		return slices.ContainsFunc(processTree(cmd.Process.Pid), func(pid int) bool {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			return strings.Contains(string(cmdline), "--type=renderer")
		})
	}, 20*time.Second, 100*time.Millisecond, "Chromium started a renderer")
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

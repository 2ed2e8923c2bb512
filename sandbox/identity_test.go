package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// running is a command held open inside a sandbox: what it reported on
// stdout until it said "ready", and its Cmd.
type running struct {
	lines []string
	cmd   *Cmd
}

// startUntilReady starts script in sb and returns once it printed "ready"
// (every line before that is kept); the command is killed when the test
// ends.
func startUntilReady(t *testing.T, sb *Sandbox, script string) running {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	c := sb.Command(ctx, "/bin/sh", "-c", script)
	c.Stdout, c.Stderr = pw, pw
	require.NoError(t, c.Start())
	t.Cleanup(func() { cancel(); c.Wait() })
	go func() { c.Wait(); pw.Close() }()
	var r running
	r.cmd = c
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if sc.Text() == "ready" {
			go io.Copy(io.Discard, pr)
			return r
		}
		r.lines = append(r.lines, sc.Text())
	}
	t.Fatalf("the command ended before it was ready: %q", r.lines)
	return r
}

// processTree returns the host pids of pid and all its descendants.
func processTree(t *testing.T, pid int) []int {
	t.Helper()
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", tree[i], tree[i]))
		if err != nil {
			continue // exited meanwhile
		}
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			require.NoError(t, err)
			tree = append(tree, n)
		}
	}
	return tree
}

// hostIDs returns the real, effective, saved and file-system uids and gids
// of a host process.
func hostIDs(t *testing.T, pid int) (uids, gids []int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if k != "Uid" && k != "Gid" {
			continue
		}
		var ids []int
		for _, f := range strings.Fields(v) {
			n, err := strconv.Atoi(f)
			require.NoError(t, err)
			ids = append(ids, n)
		}
		if k == "Uid" {
			uids = ids
		} else {
			gids = ids
		}
	}
	return uids, gids
}

// sandboxHostUID returns the host uid of r's PID 1, as the host sees it
// (inside, /proc/self/uid_map is relative to bubblewrap's outer user
// namespace and cannot tell).
func sandboxHostUID(t *testing.T, r running) int {
	t.Helper()
	r.cmd.mu.Lock()
	pid1 := r.cmd.initPid
	r.cmd.mu.Unlock()
	require.NotZero(t, pid1)
	uids, _ := hostIDs(t, pid1)
	require.NotEmpty(t, uids)
	return uids[0]
}

// TestSandboxIsNeverRootOnTheHost: whoever launches it, no process of a
// sandbox is root as the host sees it (a user namespace that maps the
// agent to host root is not enough: the host's file permission checks
// would still say root). A root launcher gives each live sandbox a uid of
// its own from DefaultUIDs; an unprivileged one runs them as itself. What
// the agent writes belongs to that uid.
func TestSandboxIsNeverRootOnTheHost(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		probe := `echo w > /workspace/w; echo h > /tmp/h; sleep 30 & echo ready; wait`
		a, b := openSandbox(t, Policy{}), openSandbox(t, Policy{})
		ra, rb := startUntilReady(t, a, probe), startUntilReady(t, b, probe)
		seen := map[int]bool{}
		for _, s := range []struct {
			sb *Sandbox
			r  running
		}{{a, ra}, {b, rb}} {
			host := sandboxHostUID(t, s.r)
			assert.NotZero(t, host, "the sandbox's user is host root")
			if os.Geteuid() == 0 {
				r := DefaultUIDs
				assert.True(t, uint32(host) >= r.First && uint32(host)-r.First < r.Count, "host uid %d outside DefaultUIDs", host)
				assert.False(t, seen[host], "two live sandboxes share host uid %d", host)
				seen[host] = true
				// bubblewrap itself runs as that user too.
				uids, _ := hostIDs(t, s.r.cmd.Pid())
				assert.Equal(t, []int{host, host, host, host}, uids, "bubblewrap's ids")
			} else {
				assert.Equal(t, os.Geteuid(), host)
			}
			s.r.cmd.mu.Lock()
			pid1 := s.r.cmd.initPid
			s.r.cmd.mu.Unlock()
			require.NotZero(t, pid1)
			for _, pid := range processTree(t, pid1) {
				uids, gids := hostIDs(t, pid)
				if uids == nil {
					continue // exited meanwhile
				}
				assert.Equal(t, []int{host, host, host, host}, uids, "host uids of sandbox process %d", pid)
				assert.NotContains(t, gids, 0, "host gids of sandbox process %d", pid)
			}
			for _, f := range []string{filepath.Join(s.sb.Workspace(), "w"), filepath.Join(s.sb.Home(), "h")} {
				var st unix.Stat_t
				require.NoError(t, unix.Stat(f, &st))
				assert.Equal(t, host, int(st.Uid), "owner of %s on the host", f)
				assert.NotZero(t, st.Gid, "group of %s on the host", f)
			}
		}
	})
}

// TestRootLauncherLiveWorkspaceRunsAsItsOwner: a root launcher runs a
// sandbox with a live workspace as that workspace's owner, so the agent
// writes it as its owner could, and refuses one that root owns (only root
// could write it). An unprivileged launcher runs it as itself.
func TestRootLauncherLiveWorkspaceRunsAsItsOwner(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		owner := os.Geteuid()
		if owner == 0 {
			owner = testLauncherUID
		}
		ws := ownedDir(t, owner)
		sb := openSandbox(t, Policy{Workspace: ws})
		r := startUntilReady(t, sb, `echo edit > /workspace/edit && echo ready && sleep 30`)
		assert.Equal(t, owner, sandboxHostUID(t, r))
		var st unix.Stat_t
		require.NoError(t, unix.Stat(filepath.Join(ws, "edit"), &st))
		assert.Equal(t, owner, int(st.Uid))

		if os.Geteuid() != 0 {
			return
		}
		_, err := New(t.Context(), Policy{Workspace: sharedDir(t)})
		assert.ErrorContains(t, err, "is owned by root")
	})
}

func TestLeaseUID(t *testing.T) {
	r := UIDRange{First: 0x70100000, Count: 3}
	held, err := bindLease(r.First + 1) // another launcher's sandbox
	require.NoError(t, err)
	defer held.Close()
	seen := map[int]bool{}
	var ids []identity
	for range 2 {
		id, err := leaseUID(r)
		require.NoError(t, err)
		ids = append(ids, id)
		assert.NotEqual(t, int(r.First+1), id.uid, "a uid another process holds")
		assert.False(t, seen[id.uid])
		seen[id.uid] = true
		assert.Equal(t, id.uid, id.gid)
	}
	_, err = leaseUID(r)
	assert.ErrorContains(t, err, "every uid of 1880096768-1880096770 is in use")
	ids[0].release()
	id, err := leaseUID(r)
	require.NoError(t, err, "a released uid is free again")
	assert.Equal(t, ids[0].uid, id.uid)
	id.release()
	ids[1].release()

	for _, bad := range []UIDRange{{First: 0, Count: 10}, {First: 60000, Count: 10000}, {First: 1<<32 - 5, Count: 10}} {
		assert.Error(t, bad.validate(), "%+v", bad)
	}
	assert.NoError(t, UIDRange{}.validate())
}

// TestEgressServesOnlyItsSandboxes: under a root launcher the egress's
// sockets must let its sandboxes' users connect, so any host user can reach
// them; the proxy answers only the launcher and the sandboxes it was given
// to. An unprivileged launcher's directory is its own alone.
func TestEgressServesOnlyItsSandboxes(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed (scripts/setup.sh installs it)")
	}
	eachLauncher(t, func(t *testing.T) {
		e := startEgress(t, EgressConfig{})
		ask := func(uid int) (string, error) {
			cmd := exec.CommandContext(t.Context(), "curl", "-sS", "--max-time", "5", "--unix-socket", e.socket(), "http://egress.test/")
			if uid != os.Geteuid() {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
			}
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := ask(os.Geteuid())
		require.NoError(t, err, out)
		assert.Contains(t, out, "this is a proxy", "the launcher itself is served")
		if os.Geteuid() != 0 {
			st, err := os.Stat(e.dir)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "no other user can reach the sockets")
			return
		}
		stranger := int(DefaultUIDs.First) - 7 // a host user no sandbox of this egress runs as
		out, err = ask(stranger)
		assert.Error(t, err, "a stranger was served: %s", out)
		assert.NotContains(t, out, "this is a proxy")

		sb := openSandbox(t, Policy{Egress: e})
		out, err = ask(sb.id.uid)
		require.NoError(t, err, out)
		assert.Contains(t, out, "this is a proxy", "the sandbox's user is served")
		require.NoError(t, sb.Close())
		out, err = ask(sb.id.uid)
		assert.Error(t, err, "a closed sandbox's user is still served: %s", out)
	})
}

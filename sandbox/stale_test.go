package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanStaleRemovesOnlyUnheldDirectories: a sandbox and an egress proxy
// in use survive, directories their killed owners left are removed however
// young, and one still being made (heldir's hidden name, not locked yet)
// is kept until the cutoff.
func TestCleanStaleRemovesOnlyUnheldDirectories(t *testing.T) {
	needBwrap(t)
	root := sharedDir(t)
	sb, err := New(t.Context(), Policy{TempRoot: root})
	require.NoError(t, err)
	defer sb.Close()
	eg, err := NewEgress(t.Context(), EgressConfig{TempDir: root})
	require.NoError(t, err)
	defer eg.Close()

	// What a SIGKILLed runner leaves: the same directories, nobody holding them.
	old := time.Now().Add(-time.Minute)
	var stale []string
	for _, prefix := range []string{agentDirPrefix, egressDirPrefix} {
		dir, err := os.MkdirTemp(root, prefix)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "home", "pi-agent"), 0o700))
		require.NoError(t, os.Chtimes(dir, old, old))
		stale = append(stale, dir)
	}
	// Killed a moment after making it: abandoned, however young.
	young, err := os.MkdirTemp(root, agentDirPrefix)
	require.NoError(t, err)
	stale = append(stale, young)
	// Still being made: heldir.Make locks it under a hidden name first.
	making, err := os.MkdirTemp(root, ".making-"+agentDirPrefix)
	require.NoError(t, err)
	other := filepath.Join(root, "unrelated")
	require.NoError(t, os.Mkdir(other, 0o700))
	require.NoError(t, os.Chtimes(other, old, old))

	// The live ones are old enough too: only their locks protect them.
	hostDir, _ := eg.Mounts()
	live := []string{filepath.Dir(sb.Home()), hostDir}
	for _, d := range live {
		require.NoError(t, os.Chtimes(d, old, old))
	}

	removed, err := CleanStale(root, time.Now().Add(-5*time.Second))
	require.NoError(t, err)
	assert.ElementsMatch(t, stale, removed)
	for _, d := range stale {
		assert.NoDirExists(t, d)
	}
	for _, d := range append(live, making, other) {
		assert.DirExists(t, d)
	}

	// Once closed, nothing of theirs is left to clean.
	require.NoError(t, sb.Close())
	require.NoError(t, eg.Close())
	for _, d := range live {
		assert.NoDirExists(t, d)
	}
	removed, err = CleanStale(root, time.Now().Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{making}, removed, "the one still being made, once past the cutoff")
}

// lockedOut is what an agent leaves to make its directories hard to
// remove: directories without permissions at all, read-only ones, files
// without permissions inside them, in /tmp and in the workspace.
const lockedOut = `for d in /tmp /workspace; do
	mkdir -p $d/a/b/c && touch $d/a/b/c/f $d/a/b/g && chmod 000 $d/a/b/c/f $d/a/b/c $d/a/b $d/a
	mkdir -p $d/r && touch $d/r/x && chmod 500 $d/r
	mkdir -p $d/w && chmod 300 $d/w
done`

// TestCloseRemovesWhatTheAgentLockedOut: whatever modes the agent leaves
// on its files, Close removes the per-agent directory (and says so when it
// cannot), and so does CleanStale after a killed launcher. An unprivileged
// launcher is the files' owner, not root: removing them needs their modes
// changed first.
func TestCloseRemovesWhatTheAgentLockedOut(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		root := sharedDir(t)
		sb, err := New(t.Context(), Policy{TempRoot: root})
		require.NoError(t, err)
		r := runSh(t, sb, lockedOut)
		require.Equal(t, 0, r.code, r.out)
		dir := filepath.Dir(sb.Home())
		require.NoError(t, sb.Close(), "Close removes what the agent locked out")
		assert.NoDirExists(t, dir)

		// A launcher killed with the same left behind: CleanStale removes it.
		sb, err = New(t.Context(), Policy{TempRoot: root})
		require.NoError(t, err)
		r = runSh(t, sb, lockedOut)
		require.Equal(t, 0, r.code, r.out)
		dir = filepath.Dir(sb.Home())
		sb.hold.Close() // its holder is gone
		sb.hold = nil
		old := time.Now().Add(-time.Minute)
		require.NoError(t, os.Chtimes(dir, old, old))
		removed, err := CleanStale(root, time.Now().Add(-5*time.Second))
		require.NoError(t, err)
		assert.Equal(t, []string{dir}, removed)
		assert.NoDirExists(t, dir)
		sb.Close()
	})
}

// TestKillStrandedKillsOnlyStrandedSetups: what a runner killed during a
// sandbox's setup leaves (bubblewrap's child, PID 1 of its own PID
// namespace, its bubblewrap gone) is killed; a process like it that is not
// PID 1 of a namespace of its own is left alone.
func TestKillStrandedKillsOnlyStrandedSetups(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare(1) is not installed (util-linux)")
	}
	// A shell under bubblewrap's name, started as a sandbox's init is.
	fake := filepath.Join(t.TempDir(), "bwrap")
	sh, err := os.ReadFile("/bin/sh")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fake, sh, 0o755))
	script := "sleep 30; :" // not the shell's last command: it stays the shell
	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(args[0], args[1:]...)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	plain := start(fake, "-c", script, InitArg)

	// Other runners on this host (the bench package's tests among them, run
	// beside this one by go test) strand setups of their own and kill
	// strays with their own KillStranded, this test's fake among them: judge
	// only the fake, and make a new one when another runner took it first.
	var killedOurs bool
	for attempt := 0; attempt < 5 && !killedOurs; attempt++ {
		// unshare --fork: the fake is PID 1 of a new namespace, its parent
		// is unshare, not bubblewrap.
		outer := start("unshare", "--user", "--map-root-user", "--pid", "--fork", fake, "-c", script, InitArg)
		fakePID := 0 // the fake, the child of unshare among the stranded
		require.Eventually(t, func() bool {
			stranded, err := Stranded()
			for _, pid := range stranded {
				if _, ppid, ok := procStat(pid); ok && ppid == outer.Process.Pid {
					fakePID = pid
				}
			}
			return err == nil && fakePID != 0
		}, 5*time.Second, 20*time.Millisecond, "the stranded setup is found")
		stranded, err := Stranded()
		require.NoError(t, err)
		assert.NotContains(t, stranded, plain.Process.Pid, "a process that is no namespace's PID 1 is not stranded")

		killed, err := KillStranded()
		require.NoError(t, err)
		assert.NotContains(t, killed, plain.Process.Pid)
		killedOurs = slices.Contains(killed, fakePID)
		require.Eventually(t, func() bool { s, _ := Stranded(); return !slices.Contains(s, fakePID) }, 5*time.Second, 20*time.Millisecond)
	}
	assert.True(t, killedOurs, "KillStranded never killed the stranded setup")
	assert.NoError(t, plain.Process.Signal(syscall.Signal(0)), "the other process lives")
}

package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// launcherArg makes the test binary (see TestMain) a launcher for
// TestKilledLauncherLeavesNoSandbox: it prepares a sandbox under TempRoot
// ROOT, says so with a line on stdout, then starts commands tagged TAG in
// it from two goroutines, one after another and never waiting for them,
// until it is killed.
const launcherArg = "__sandbox-test-launcher"

func runLauncher(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: __sandbox-test-launcher TAG ROOT")
		return 2
	}
	tag, root := args[0], args[1]
	ctx := context.Background()
	sb, err := New(ctx, Policy{TempRoot: root})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	for range 2 {
		go func() {
			for {
				// The shell is the command; "; :" keeps it from
				// becoming sleep, so the tag stays on a live process.
				c := sb.Command(ctx, "/bin/sh", "-c", "sleep 60; :", tag)
				if err := c.Start(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
		}()
	}
	select {}
}

// tagged lists the processes whose command line has tag as one of its
// arguments: the launcher's bubblewrap processes (the command line follows
// its options), the inits and the commands of its sandboxes, also a
// sandbox's PID 1 still inside bubblewrap's setup. Only this test's
// launchers use the tag.
func tagged(tag string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), tag) {
			continue
		}
		if _, _, ok := procStat(pid); ok { // not a zombie
			out = append(out, pid)
		}
	}
	return out
}

// inSetup counts the processes of pids that are bubblewrap's child still in
// its setup: PID 1 of its sandbox's namespace, not yet the init.
func inSetup(pids []int) int {
	n := 0
	for _, pid := range pids {
		if comm, _, ok := procStat(pid); ok && comm == "bwrap" && nsPID1(pid) {
			n++
		}
	}
	return n
}

// TestKilledLauncherLeavesNoSandbox: a launcher SIGKILLed at any moment,
// its sandboxes in every stage of their setup (bubblewrap starting, its
// child waiting for the user namespace, the mounts, the init starting)
// or running, leaves none of their processes behind: each is gone within
// a bounded wait after the kill, without anything else (KillStranded, a
// later runner) cleaning up.
func TestKilledLauncherLeavesNoSandbox(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		const kills = 40
		const bound = 5 * time.Second
		self, err := os.Open("/proc/self/exe")
		require.NoError(t, err)
		defer self.Close()
		root := sharedDir(t)
		tag := newMarker(t, "lifeline")
		t.Cleanup(func() { // should the test fail: this test's processes only
			for _, pid := range tagged(tag) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})

		var stranded, midSetup, leftTotal int
		for i := range kills {
			delay := time.Duration(i%20) * 2 * time.Millisecond // 0, 2, ... 38 ms after it is ready
			cmd := exec.Command("/proc/self/fd/3", launcherArg, tag, root)
			cmd.ExtraFiles = []*os.File{self}
			cmd.Stderr = os.Stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("launcher %d did not get ready: %v", i, err)
			}
			require.Equal(t, "ready\n", line)
			time.Sleep(delay)
			setup := inSetup(tagged(tag))
			require.NoError(t, cmd.Process.Kill())
			cmd.Wait()
			if setup > 0 {
				midSetup++
			}

			deadline := time.Now().Add(bound)
			left := tagged(tag)
			for len(left) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
				left = tagged(tag)
			}
			if len(left) > 0 {
				stranded++
				leftTotal += len(left)
				t.Errorf("kill %d (%v after ready, %d sandboxes in bubblewrap's setup): %d processes outlived the launcher by %v: %s",
					i, delay, setup, len(left), bound, describeProcs(left))
				for _, pid := range left {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		t.Logf("%d kills, %d with a sandbox in bubblewrap's setup at the kill; %d left processes behind (%d processes)",
			kills, midSetup, stranded, leftTotal)
		assert.Positive(t, midSetup, "some kills land during bubblewrap's setup")
	})
}

// describeProcs names each process of pids (pid, command name, parent).
func describeProcs(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		comm, ppid, _ := procStat(pid)
		fmt.Fprintf(&b, "[%d %s ppid %d pid1 %v] ", pid, comm, ppid, nsPID1(pid))
	}
	return b.String()
}

// TestLifelineWriteEndStaysTheLaunchers: the write end of a sandbox's
// lifeline is held by the launcher alone, never by its bubblewrap, its
// init, its command, another sandbox (started while the first runs) or a
// host process the launcher starts: any of them holding it would keep the
// sandbox alive past the launcher. The init holds the read end.
func TestLifelineWriteEndStaysTheLaunchers(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("only root may list the descriptors of a sandbox's init, which is undumpable; TestKilledLauncherLeavesNoSandbox proves the lifeline for an unprivileged launcher")
	}
	sb := openSandbox(t, Policy{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := func() *Cmd {
		c := sb.Command(ctx, "/bin/sh", "-c", "sleep 30 & sleep 30; :")
		require.NoError(t, c.Start())
		t.Cleanup(func() { cancel(); c.Wait() })
		return c
	}
	a := start()
	b := start()
	host := exec.CommandContext(ctx, "sleep", "30")
	require.NoError(t, host.Start())
	t.Cleanup(func() { cancel(); host.Wait() })
	// Let each sandbox's processes start (sh and both sleeps).
	require.Eventually(t, func() bool {
		return len(descendants(a.Pid())) >= 4 && len(descendants(b.Pid())) >= 4
	}, 10*time.Second, 20*time.Millisecond)

	for _, c := range []*Cmd{a, b} {
		ino := pipeInode(t, c.lifeline)
		writers, readers := pipeHolders(ino)
		assert.Equal(t, []int{os.Getpid()}, writers, "the lifeline's write end is the launcher's alone")
		c.mu.Lock()
		init := c.initPid
		c.mu.Unlock()
		assert.Equal(t, []int{init}, readers, "the init alone holds the read end")
	}
}

// pipeInode returns the inode of the pipe f is an end of.
func pipeInode(t *testing.T, f *os.File) string {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(link, "pipe:"), link)
	return link
}

// pipeHolders lists the processes that hold the pipe link ("pipe:[N]")
// open for writing and those that hold it for reading.
func pipeHolders(link string) (writers, readers []int) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l != link {
				continue
			}
			info, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
			var flags int
			for line := range strings.Lines(string(info)) {
				if v, ok := strings.CutPrefix(line, "flags:"); ok {
					fmt.Sscanf(strings.TrimSpace(v), "%o", &flags)
				}
			}
			if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
				readers = append(readers, pid)
			} else {
				writers = append(writers, pid)
			}
		}
	}
	return slices.Compact(writers), slices.Compact(readers)
}

// descendants lists pid's descendants.
func descendants(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		for q := p; q > 1; {
			_, ppid, ok := procStat(q)
			if !ok {
				break
			}
			if ppid == pid {
				out = append(out, p)
				break
			}
			q = ppid
		}
	}
	return out
}

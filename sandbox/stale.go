package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench/internal/heldir"
)

// Host directories created per agent. A process killed with SIGKILL cannot
// remove them, so each is held (package heldir) for as long as it is in
// use; CleanStale removes the ones nobody holds.
const (
	agentDirPrefix  = "pairbench-sandbox-"
	egressDirPrefix = "pairbench-egress-"
)

// CleanStale removes the per-agent and egress socket directories under root
// that no live process holds: those left behind by a runner that was
// killed. An empty root means where New and NewEgress put them by default
// (/tmp, and os.TempDir() for egress). A directory is held from the moment
// it has its name (heldir.Make), so an unheld one is removed however young;
// only one still being made, changed after cutoff, is left alone: pass a
// cutoff a few seconds in the past. It returns the
// directories it removed; directories it could not remove are reported in
// the error and the rest are still cleaned.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	if root != "" {
		return heldir.Clean(root, cutoff, removeAll, agentDirPrefix+"*", egressDirPrefix+"*")
	}
	removed, err := heldir.Clean("/tmp", cutoff, removeAll, agentDirPrefix+"*", egressDirPrefix+"*")
	if tmp := filepath.Clean(os.TempDir()); tmp != "/tmp" {
		more, err2 := heldir.Clean(tmp, cutoff, removeAll, egressDirPrefix+"*")
		removed, err = append(removed, more...), errors.Join(err, err2)
	}
	return removed, err
}

// KillStranded kills the sandboxes whose start was cut short with their
// bubblewrap gone. While bubblewrap sets a sandbox up, its child (the
// sandbox's PID 1 to be) waits for it; a bubblewrap that dies then strands
// the child, blocked for good, before the init (and its lifeline, see
// Cmd.Start) runs. A killed launcher no longer takes bubblewrap with it,
// but runners of versions before the lifeline did (bubblewrap had their
// parent-death signal), and a bubblewrap killed by someone else, or
// failing there, still does. Such a process is bubblewrap,
// started for a sandbox's init, PID 1 of its own PID namespace, whose
// parent is not bubblewrap; a sandbox that is starting or running never is
// (its PID 1 is bubblewrap's child, or the init). It returns the processes
// killed; ones it may not signal (another user's) are left.
func KillStranded() ([]int, error) {
	stranded, err := Stranded()
	var killed []int
	for _, pid := range stranded {
		if unix.Kill(pid, unix.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed, err
}

// Stranded lists the processes KillStranded kills.
func Stranded() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("sandbox: list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, ok := procStat(pid)
		if !ok || comm != "bwrap" {
			continue
		}
		if parent, _, ok := procStat(ppid); ok && parent == "bwrap" {
			continue // still set up by its bubblewrap
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), InitArg) {
			continue
		}
		if nsPID1(pid) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// procStat reads a live process's command name and parent.
func procStat(pid int) (comm string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(s[end+1:]) // state, ppid, ...
	if len(f) < 2 || f[0] == "Z" {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return s[open+1 : end], ppid, err == nil
}

// nsPID1 reports whether pid is PID 1 of a PID namespace below ours.
func nsPID1(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			return len(f) > 1 && f[len(f)-1] == "1"
		}
	}
	return false
}

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Limits caps a sandbox's resources. Every sandbox has limits: a zero
// Memory, Pids or FileSize is DefaultLimits'. They are enforced twice
// where the host allows: by a cgroup v2 created for the sandbox under
// Parent (Memory and CPU for the whole sandbox, Pids as pids.max), which
// the host must delegate (see docs/sandbox.md), and in every case by
// rlimits the init sets before anything else runs: Pids as the sandbox's
// process and thread count (RLIMIT_NPROC, counted in the sandbox's own
// user namespace), Memory per process (RLIMIT_DATA), FileSize per file
// (RLIMIT_FSIZE), no core dumps. TmpSize and WorkspaceSize need neither.
type Limits struct {
	Memory   int64   // bytes of memory (memory.max, swap refused; RLIMIT_DATA per process); 0: DefaultLimits'
	Pids     int     // processes and threads (pids.max; RLIMIT_NPROC); 0: DefaultLimits'
	CPU      float64 // CPUs' worth of time per period (cpu.max, cgroup only), e.g. 0.5; 0: no cap
	FileSize int64   // bytes in any one file written (RLIMIT_FSIZE); 0: DefaultLimits'
	TmpSize  int64   // bytes in /tmp, a tmpfs of this size holding a copy of the home's entries; 0: no cap
	// WorkspaceSize makes a fresh workspace a tmpfs of this many bytes,
	// empty and private to each command (the host never sees what is
	// written there; Sandbox.Workspace stays empty); 0: the per-agent
	// directory's, uncapped. It cannot be combined with Policy.Workspace.
	WorkspaceSize int64
	// Parent is the cgroup v2 directory sandboxes' cgroups are created in,
	// e.g. /sys/fs/cgroup/user.slice/.../pairbench; the cgroup is then
	// required (New fails without it). Empty means the launcher's own
	// cgroup when it delegates the controllers, else rlimits alone.
	Parent string
}

// DefaultLimits are what a sandbox gets for every zero field of its
// Limits: room for an agent, its MCP servers and a browser, far from what
// the host has.
var DefaultLimits = Limits{Memory: 4 << 30, Pids: 512, FileSize: 4 << 30}

// withDefaults returns l with DefaultLimits' values for its zero fields.
func (l Limits) withDefaults() Limits {
	if l.Memory == 0 {
		l.Memory = DefaultLimits.Memory
	}
	if l.Pids == 0 {
		l.Pids = DefaultLimits.Pids
	}
	if l.FileSize == 0 {
		l.FileSize = DefaultLimits.FileSize
	}
	return l
}

func (l Limits) validate() error {
	if l.Memory < 0 || l.Pids < 0 || l.CPU < 0 || l.FileSize < 0 || l.TmpSize < 0 || l.WorkspaceSize < 0 {
		return errors.New("sandbox: limits cannot be negative (zero means the default)")
	}
	return nil
}

// describe says what l holds, for a report.
func (l Limits) describe() string {
	s := fmt.Sprintf("memory %s, %d processes and threads", bytesText(l.Memory), l.Pids)
	if l.CPU > 0 {
		s += fmt.Sprintf(", %g CPUs", l.CPU)
	}
	return s
}

// bytesText renders n bytes in the largest binary unit that divides it.
func bytesText(n int64) string {
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.n && n%u.n == 0 {
			return fmt.Sprintf("%d %s", n/u.n, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// controllers returns the cgroup controllers l needs.
func (l Limits) controllers() []string {
	var c []string
	if l.CPU > 0 {
		c = append(c, "cpu")
	}
	if l.Memory > 0 {
		c = append(c, "memory")
	}
	if l.Pids > 0 {
		c = append(c, "pids")
	}
	return c
}

// UnsupportedError reports that the host cannot enforce what a policy asks.
type UnsupportedError struct {
	What   string // e.g. "resource limits"
	Reason string // one line, with what to do about it
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("sandbox: %s unavailable: %s", e.What, e.Reason)
}

// cgroupHost locates cgroup v2 on this host: where it is mounted and the
// launcher's own cgroup (a path relative to the mount).
type cgroupHost struct {
	mount string
	self  string
}

// detectCgroupHost reads /proc/self/mountinfo and /proc/self/cgroup.
func detectCgroupHost() (cgroupHost, error) {
	var h cgroupHost
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return h, err
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 {
			h.mount = f[4]
			break
		}
	}
	if h.mount == "" {
		return h, errors.New("no cgroup v2 file system is mounted (a cgroup v1 host cannot delegate limits)")
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return h, err
	}
	for line := range strings.SplitSeq(string(cg), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			h.self = rest
		}
	}
	return h, nil
}

// cgroup is one sandbox's cgroup.
type cgroup struct {
	path string
	dir  *os.File
}

// newCgroup creates a cgroup with l's limits, under l.Parent or the
// launcher's own cgroup.
func newCgroup(l Limits) (*cgroup, error) {
	h, err := detectCgroupHost()
	if err != nil {
		return nil, &UnsupportedError{What: "resource limits", Reason: err.Error()}
	}
	return createCgroup(h, l)
}

func createCgroup(h cgroupHost, l Limits) (*cgroup, error) {
	unsupported := func(format string, args ...any) error {
		return &UnsupportedError{What: "resource limits", Reason: fmt.Sprintf(format, args...) +
			"; delegate a cgroup v2 subtree to pairbench (docs/sandbox.md, \"Resource limits\")"}
	}
	parent := l.Parent
	if parent == "" {
		parent = filepath.Join(h.mount, h.self)
	}
	need := l.controllers()
	avail, err := readFields(filepath.Join(parent, "cgroup.controllers"))
	if err != nil {
		return nil, unsupported("%v", err)
	}
	if missing := without(need, avail); len(missing) > 0 {
		return nil, unsupported("controller %s not delegated to %s (it has: %s)", strings.Join(missing, ", "), parent, orDefault(strings.Join(avail, " "), "none"))
	}
	enabled, err := readFields(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return nil, unsupported("%v", err)
	}
	if missing := without(need, enabled); len(missing) > 0 {
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+strings.Join(missing, " +")), 0); err != nil {
			return nil, unsupported("cannot enable %s for the children of %s (a cgroup holding processes cannot; give pairbench a parent cgroup of its own): %v", strings.Join(missing, ", "), parent, err)
		}
	}
	path, err := os.MkdirTemp(parent, "pairbench-sandbox-")
	if err != nil {
		return nil, unsupported("cannot create a cgroup in %s: %v", parent, err)
	}
	cg := &cgroup{path: path}
	settings := map[string]string{}
	if l.Memory > 0 {
		settings["memory.max"] = fmt.Sprint(l.Memory)
		settings["memory.swap.max"] = "0"
	}
	if l.Pids > 0 {
		settings["pids.max"] = fmt.Sprint(l.Pids)
	}
	if l.CPU > 0 {
		const period = 100000 // µs
		settings["cpu.max"] = fmt.Sprintf("%d %d", max(1000, int(l.CPU*period)), period)
	}
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		err := os.WriteFile(filepath.Join(path, name), []byte(settings[name]), 0)
		if err != nil && !(name == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			cg.remove()
			return nil, fmt.Errorf("sandbox: cgroup %s: %w", name, err)
		}
	}
	if cg.dir, err = os.Open(path); err != nil {
		cg.remove()
		return nil, fmt.Errorf("sandbox: cgroup: %w", err)
	}
	return cg, nil
}

// fd is the cgroup directory's descriptor, for clone3 (CgroupFD).
func (c *cgroup) fd() int { return int(c.dir.Fd()) }

// kill kills every process in the cgroup.
func (c *cgroup) kill() error {
	err := os.WriteFile(filepath.Join(c.path, "cgroup.kill"), []byte("1"), 0)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Before Linux 5.14: kill the processes one by one.
	procs, err := readFields(filepath.Join(c.path, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscan(p, &pid); err == nil && pid > 0 {
			if proc, err := os.FindProcess(pid); err == nil {
				proc.Kill()
			}
		}
	}
	return nil
}

// remove removes the (emptied) cgroup, waiting briefly for its processes
// to be gone.
func (c *cgroup) remove() error {
	if c.dir != nil {
		c.dir.Close()
	}
	var err error
	for range 40 {
		if err = os.Remove(c.path); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("sandbox: remove cgroup: %w", err)
}

// readFields returns the whitespace-separated fields of a file.
func readFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// without returns the elements of want that are not in have.
func without(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// AgentLimits are the limits pairbench's agents (pi, Claude Code, Codex)
// run with besides DefaultLimits': /tmp (with the agent's configuration
// copied in) and the workspace are memory file systems of 256 MiB each,
// so that an agent filling them fills neither the host's disk nor the
// temporary directory every other trial's sandbox and egress need.
var AgentLimits = Limits{TmpSize: 256 << 20, WorkspaceSize: 256 << 20}

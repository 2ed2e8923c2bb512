package sandbox

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
)

// sharedUserLimits are the shares of the kernel's per-user counters that
// each sandbox of an unprivileged launcher may hold. Its sandboxes run as
// the launcher's own user, so the kernel counts what they hold together
// with the launcher's (fs.inotify.max_user_instances, 128 by default): one
// sandbox holding them all would leave the launcher and every other
// sandbox without. A root launcher's sandboxes run as users of their own
// and need no share. Each is the sandbox's own user namespace's limit
// (/proc/sys/user/NAME), which the kernel enforces besides the host's.
var sharedUserLimits = map[string]int{
	"max_inotify_instances": 16,
	"max_inotify_watches":   8192,
}

// shareUserLimits makes cmd, bubblewrap started as the launcher, start in
// a user namespace of its own, where the launcher is root, whose
// sharedUserLimits a shell sets before it executes bubblewrap. The
// sandbox's own user namespace nests inside it, so everything the sandbox
// holds counts against those limits as well as the host's.
func shareUserLimits(cmd *exec.Cmd) {
	var script strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sharedUserLimits)) {
		fmt.Fprintf(&script, "echo %d > /proc/sys/user/%s && ", sharedUserLimits[name], name)
	}
	script.WriteString(`exec "$0" "$@"`)
	cmd.Args = append([]string{"sh", "-c", script.String(), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
	cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
	cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	cmd.SysProcAttr.GidMappingsEnableSetgroups = false
}

// canShareUserLimits reports whether shareUserLimits may make its user
// namespace: not where AppArmor restricts unprivileged user namespaces
// (Ubuntu 24.04), which would give the launcher's own namespace no
// capability to set limits with (the profile that lets bubblewrap create
// namespaces does not cover pairbench).
func canShareUserLimits() bool {
	b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	return err != nil || strings.TrimSpace(string(b)) != "1"
}

// sharedReport says what sandboxes share through their host user, for
// CheckReport.Shared: own when they run as the launcher, divided when
// shareUserLimits gives each its share.
func sharedReport(own, divided bool) string {
	if !own {
		return "nothing per user: each sandbox runs as a host user of its own"
	}
	share := "inotify instances and watches are not divided either, since AppArmor restricts unprivileged user namespaces here"
	if divided {
		share = fmt.Sprintf("each sandbox holds at most %d inotify instances and %d watches of them",
			sharedUserLimits["max_inotify_instances"], sharedUserLimits["max_inotify_watches"])
	}
	return "the launcher's user and its kernel counters: pending signals, POSIX message queue bytes and locked shared memory are not divided, " +
		"so one sandbox can exhaust them for all; " + share +
		" (a root launcher gives each sandbox a user of its own; docs/sandbox.md, \"Who the sandbox is on the host\")"
}

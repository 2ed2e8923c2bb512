package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CheckError is a failed self-check: Reason is one line saying what is
// wrong and what to do about it.
type CheckError struct{ Reason string }

func (e *CheckError) Error() string { return e.Reason }

// CheckOptions says what Check must prove invisible.
type CheckOptions struct {
	// Bwrap is the bubblewrap binary; empty means "bwrap" from PATH.
	Bwrap string
	// Hidden lists host paths a sandbox must not see, such as the bench's
	// checkout. The host home directory and a file Check plants in the
	// host's /tmp are always added.
	Hidden []string
	// TempRoot is where the probe's per-agent directory is created; empty
	// means /tmp.
	TempRoot string
}

// CheckReport says how a sound sandbox is confined on this host where that
// depends on the host.
type CheckReport struct {
	// Limits says how resource limits are enforced: by a delegated cgroup
	// and rlimits, or by rlimits alone and why.
	Limits string
	// Devices says how the host's device nodes in /dev are bound.
	Devices string
	// Init names the binary every sandboxed command starts under
	// (InitProgram, or the running binary and why).
	Init string
	// Shared says what sandboxes share with each other and with the
	// launcher's user: nothing per user under a root launcher; under an
	// unprivileged one, that user's kernel counters, of which each
	// sandbox gets a capped share where the kernel allows.
	Shared string
}

// Check is the start-up probe: it fails closed, with a *CheckError whose
// message is one line, when bubblewrap is missing, the kernel refuses it
// the user namespaces it needs, or a probe sandbox can see what it must
// not (opts.Hidden, the host home, other files in /tmp, a writable /proc/sys,
// host processes, a capability, the host network, the launcher's
// environment, its PID 1's memory) or runs as root, or without a process
// limit. When a sandbox built by this package is sound on this host it
// returns how it is confined where that depends on the host.
func Check(ctx context.Context, opts CheckOptions) (CheckReport, error) {
	bwrap, err := exec.LookPath(orDefault(opts.Bwrap, "bwrap"))
	if err != nil {
		return CheckReport{}, &CheckError{"bubblewrap is not installed: install the bwrap binary (Debian/Ubuntu: apt-get install bubblewrap)"}
	}
	if reason := userNamespaceBlocker(); reason != "" {
		return CheckReport{}, &CheckError{reason}
	}

	planted, err := os.CreateTemp("/tmp", "pairbench-check-")
	if err != nil {
		return CheckReport{}, fmt.Errorf("sandbox check: plant a file in /tmp: %w", err)
	}
	planted.Close()
	defer os.Remove(planted.Name())
	hidden := []string{planted.Name()}
	if home, err := os.UserHomeDir(); err == nil {
		hidden = append(hidden, home)
	}
	hidden = append(hidden, opts.Hidden...)
	// Each hidden path goes in with its host identity (device and inode):
	// the sandbox has a /tmp, a root and /usr of its own, and a path is
	// visible only when it is the host's file there, not when a sandbox
	// file has the same name. A path missing on the host hides nothing.
	var probes []string
	for _, h := range hidden {
		var st unix.Stat_t
		if unix.Stat(h, &st) == nil {
			probes = append(probes, h, fmt.Sprintf("%d:%d", st.Dev, st.Ino))
		}
	}
	sb, err := New(ctx, Policy{Bwrap: bwrap, TempRoot: opts.TempRoot})
	if err != nil {
		return CheckReport{}, fmt.Errorf("sandbox check: %w", err)
	}
	defer sb.Close()

	var script strings.Builder
	script.WriteString(`while [ $# -gt 1 ]; do
	[ "$(stat -L -c %d:%i "$1" 2>/dev/null)" = "$2" ] && echo "visible: $1"
	shift 2
done
`)
	script.WriteString(`test "$(id -u)" = 0 && echo "runs as root"
grep -E '^Cap(Prm|Eff|Bnd|Amb):' /proc/self/status | grep -qv '0000000000000000$' && echo "holds capabilities"
test -w /proc/sys/kernel/hostname && echo "visible: a writable /proc/sys"
{ tr '\0' '\n' < /proc/1/environ | grep -q . ; } 2>/dev/null && echo "visible: the environment of PID 1 in /proc/1/environ"
{ test -r /proc/1/mem || test -w /proc/1/mem || ls /proc/1/fd >/dev/null ; } 2>/dev/null && echo "visible: the memory or descriptors of PID 1"
test "$(ls -d /proc/[0-9]* | wc -l)" -gt 8 && echo "visible: host processes"
grep -v -e '^ *lo:' -e '|' /proc/net/dev | grep -q . && echo "visible: a host network interface"
grep -Eq '^Max processes +unlimited' /proc/self/limits && echo "runs without a process limit"
echo probe-ran
`)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// The probe waits on its stdin after "probe-ran" so that its ids can
	// be read from the host's side: inside, nothing tells which host user
	// the sandbox's uid is.
	script.WriteString("read -r _\n")
	outR, outW := io.Pipe()
	inR, inW, err := os.Pipe()
	if err != nil {
		return CheckReport{}, fmt.Errorf("sandbox check: %w", err)
	}
	defer inR.Close()
	defer inW.Close()
	c := sb.Command(ctx, "/bin/sh", append([]string{"-c", script.String(), "probe"}, probes...)...)
	c.Stdin, c.Stdout, c.Stderr = inR, outW, outW
	if err := c.Start(); err != nil {
		return CheckReport{}, &CheckError{fmt.Sprintf("bubblewrap cannot create a sandbox here: %v", err)}
	}
	var runErr error
	go func() {
		<-c.done // a probe that never gets to its read must not hold Wait
		inW.Close()
	}()
	go func() { runErr = c.Wait(); outW.Close() }()
	var lines []string
	hostRoot := false
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "probe-ran" {
			hostRoot = c.hostUID() == 0
			inW.Close()
		}
	}
	inW.Close()
	c.Wait()
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	if !strings.HasSuffix(text, "probe-ran") {
		return CheckReport{}, &CheckError{fmt.Sprintf("bubblewrap cannot create a sandbox here: %s", firstLine(text, runErr))}
	}
	problems := strings.TrimSpace(strings.TrimSuffix(text, "probe-ran"))
	if hostRoot {
		problems = strings.TrimSpace(problems + "\nruns as root on the host")
	}
	if problems != "" {
		return CheckReport{}, &CheckError{"a sandbox can see what it must not: " + strings.ReplaceAll(problems, "\n", "; ")}
	}
	rep := CheckReport{Limits: sb.LimitsReport(), Devices: "read-only binds from " + readOnlyDevDir, Init: describeInit(""),
		Shared: sharedReport(sb.id.own(), sb.divide)}
	if sb.devNote != "" {
		rep.Devices = "writable binds of the host's (" + sb.devNote + "); the sandbox, not their owner, can change only their times"
	}
	return rep, nil
}

// userNamespaceBlocker returns why the kernel refuses unprivileged user
// namespaces, with the fix, or "" when nothing is known to block them.
func userNamespaceBlocker() string {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		return "user namespaces are disabled (user.max_user_namespaces = 0): allow them with sysctl -w user.max_user_namespaces=15000"
	}
	if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" && os.Geteuid() != 0 {
		return "unprivileged user namespaces are disabled: allow them with sysctl -w kernel.unprivileged_userns_clone=1"
	}
	if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" && os.Geteuid() != 0 && !bwrapProfile() {
		return "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04+): allow bwrap with an AppArmor profile (docs/sandbox.md) or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	}
	return ""
}

// bwrapProfile reports whether an AppArmor profile that grants userns to
// bwrap is installed (Ubuntu ships one as /etc/apparmor.d/bwrap-userns-restrict).
func bwrapProfile() bool {
	matches, _ := filepath.Glob("/etc/apparmor.d/*bwrap*")
	return len(matches) > 0
}

// firstLine returns the first line of out, or err's text.
func firstLine(out string, err error) string {
	if line, _, _ := strings.Cut(out, "\n"); line != "" {
		if strings.Contains(line, "setting up uid map") || strings.Contains(line, "Operation not permitted") ||
			strings.Contains(line, "No permissions to create") {
			return line + " (user namespaces are refused; on Ubuntu 24.04: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap, see docs/sandbox.md)"
		}
		return line
	}
	if err != nil {
		return err.Error()
	}
	return "no output"
}

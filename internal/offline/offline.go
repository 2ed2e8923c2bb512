// Package offline runs tests and the commands they start inside a network
// namespace of their own whose only interface is loopback: nothing they do
// reaches the machine's network or the internet, and their listeners are
// reachable only from inside. Tests that start Chromium use it, since
// Chromium reaches out on its own (an IPv6 reachability probe at start-up).
//
// The namespace needs root, or user namespaces for an unprivileged user (the
// process then keeps its uid). Loopback is brought up with ip(8), which
// scripts/setup.sh installs.
package offline

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// insideEnv marks a test binary that Main already moved into its namespace.
const insideEnv = "PAIRBENCH_OFFLINE"

// Command returns a command that runs name with args in a new network
// namespace with loopback up. It dies with its parent. An unprivileged
// caller's command holds no capability: the one that brought loopback up is
// dropped before name runs (bubblewrap, for one, refuses to start with it).
func Command(name string, args ...string) *exec.Cmd { return CommandAfter("", name, args...) }

// CommandAfter is Command running the shell command setup in the new
// namespace first, with the capability to configure its network (ip link
// add, ip addr add) that name does not get; name runs only if setup succeeds.
func CommandAfter(setup, name string, args ...string) *exec.Cmd {
	script := `ip link set lo up`
	if setup != "" {
		script += " && " + setup
	}
	if os.Getuid() != 0 {
		script += ` && exec setpriv --inh-caps=-all --ambient-caps=-all "$0" "$@"`
	} else {
		script += ` && exec "$0" "$@"`
	}
	cmd := exec.Command("sh", append([]string{"-c", script, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		cmd.SysProcAttr.AmbientCaps = []uintptr{capNetAdmin}
	}
	return cmd
}

// capNetAdmin lets the unprivileged shell of Command bring loopback up in
// the namespace its user namespace owns.
const capNetAdmin = 12

// Main runs the test binary's tests inside a namespace made by Command.
// Call it from TestMain in place of m.Run.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with work of its own after the tests (a
// database to stop): inside the namespace it runs the tests and returns
// m.Run's code; outside it re-executes the test binary in a namespace made
// by Command and returns that run's exit code, having run no test itself.
// The caller passes the code to os.Exit.
func Run(m *testing.M) int {
	if os.Getenv(insideEnv) != "" {
		return m.Run()
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "offline: %v\n", err)
		return 1
	}
	cmd := Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "offline: cannot run the tests in a network namespace of their own: %v\n", err)
	return 1
}

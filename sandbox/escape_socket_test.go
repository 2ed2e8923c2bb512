package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEscapeSocketFamilies: a network namespace confines the internet
// families, unix sockets' abstract names and netlink, not every address
// family. vsock has one port space for the whole machine: on a VM (this
// project's CI runs on Firecracker) a port the host's own process holds
// could not be bound inside on the old code (EADDRINUSE, the same port),
// so the sandbox could dial the hypervisor's and the host's vsock
// services around its egress. Inside, only AF_UNIX, AF_INET, AF_INET6 and
// AF_NETLINK sockets open; every other family fails with EAFNOSUPPORT.
func TestEscapeSocketFamilies(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		exe := testBinary(t)
		sb := openSandbox(t, Policy{ReadOnly: []string{exe}})
		if fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0); err == nil {
			unix.Close(fd)
			t.Log("this kernel has vsock: the launcher opened an AF_VSOCK socket")
		}
		for _, family := range []string{"unix", "inet", "inet6", "netlink"} {
			r := runSh(t, sb, exe+" "+escapeArg+" socket "+family)
			require.Equal(t, 0, r.code, "control: a %s socket opens inside: %s", family, r.out)
		}
		for _, family := range []string{"vsock", "alg", "packet", "rds", "tipc", "can", "bluetooth", "xdp"} {
			r := runSh(t, sb, exe+" "+escapeArg+" socket "+family)
			assert.Equal(t, 1, r.code, "a %s socket opened inside: %s", family, r.out)
			assert.Equal(t, "DENIED: "+unix.EAFNOSUPPORT.Error(), strings.TrimSpace(r.out), family)
		}
	})
}

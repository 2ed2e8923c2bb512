package offline

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

// TestOnlyLoopback checks the namespace the tests run in: one interface,
// loopback, up; and that a listener outside it is out of reach.
func TestOnlyLoopback(t *testing.T) {
	ifaces, err := net.Interfaces()
	require.NoError(t, err)
	require.Len(t, ifaces, 1)
	assert.Equal(t, "lo", ifaces[0].Name)
	assert.NotZero(t, ifaces[0].Flags&net.FlagUp, "loopback is up")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err, "loopback works inside")
	c.Close()

	// A command of its own namespace cannot reach this one's listener.
	out, err := Command("bash", "-c", "exec 3<>/dev/tcp/"+strings.Replace(ln.Addr().String(), ":", "/", 1)+" && echo reached").CombinedOutput()
	assert.Error(t, err)
	assert.NotContains(t, string(out), "reached")
	_, isExit := err.(*exec.ExitError)
	assert.True(t, isExit, "the command ran and failed to connect: %v %s", err, out)
}

// TestNoCapabilityInside checks that an unprivileged caller's tests hold
// none of the capabilities of the shell that brought loopback up: with one,
// bubblewrap refuses to start ("Unexpected capabilities but not setuid").
func TestNoCapabilityInside(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root's tests keep root's capabilities; run the tests unprivileged to check the drop")
	}
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok && (name == "CapEff" || name == "CapAmb" || name == "CapInh") {
			assert.Equal(t, "0000000000000000", strings.TrimSpace(value), name)
		}
	}
}

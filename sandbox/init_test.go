package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
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
)

// initCmd runs this test binary as the sandbox init helper with args.
func initCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], append([]string{InitArg}, args...)...)
	cmd.Env = os.Environ()
	return cmd
}

func initExitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	require.True(t, ok, "want an exit error, got %v", err)
	return ee.ExitCode()
}

func TestRunInitExitStatus(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"--", "sh", "-c", "exit 0"}, 0},
		{[]string{"--", "sh", "-c", "exit 3"}, 3},
		{[]string{"--", "sh", "-c", "kill -TERM $$"}, 128 + int(syscall.SIGTERM)},
		{[]string{"--", "/nonexistent/command"}, 127},
		{[]string{"--", "pairbench-no-such-command"}, 127}, // looked up in PATH
		{[]string{"--", "/etc/passwd"}, 126},               // there, but not executable
		{[]string{"--", "true"}, 0},
		{[]string{}, 2},
		{[]string{"-forward", "nonsense", "--", "true"}, 2},
	}
	for _, c := range cases {
		err := initCmd(t, c.args...).Run()
		assert.Equal(t, c.want, initExitCode(t, err), "RunInit(%q)", c.args)
	}
}

func TestRunInitPassesEnv(t *testing.T) {
	cmd := initCmd(t, "--", "sh", "-c", `echo "$PB_TEST_VAR"`)
	cmd.Env = append(cmd.Env, "PB_TEST_VAR=inherited")
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "inherited\n", string(out))
}

// TestSignalToTheInit: the init handles no signal itself, so one that a
// process of the sandbox sends its PID 1 does what the Go runtime does
// with it in any program: a terminating one ends the init and with it
// every process of the sandbox at once, never leaving the command running
// under an init that has gone; the others change nothing.
func TestSignalToTheInit(t *testing.T) {
	needBwrap(t)
	for _, c := range []struct {
		sig  string
		ends bool
	}{
		{"TERM", true}, {"INT", true}, {"HUP", true}, {"QUIT", true},
		{"USR1", false}, {"USR2", false}, {"ALRM", false}, {"CHLD", false}, {"WINCH", false},
	} {
		sb := openSandbox(t, Policy{})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		script := "sleep 600 & kill -" + c.sig + " 1; sleep 1; echo alive"
		if c.ends {
			script = "sleep 600 & kill -" + c.sig + " 1; sleep 600"
		}
		var out bytes.Buffer
		cmd := sb.Command(ctx, "sh", "-c", script)
		cmd.Stdout = &out
		err := cmd.Run()
		require.NoError(t, ctx.Err(), "SIG%s to PID 1: the sandbox outlived its init", c.sig)
		cancel()
		if !c.ends {
			assert.NoError(t, err, "SIG%s to PID 1", c.sig)
			assert.Equal(t, "alive\n", out.String(), "SIG%s to PID 1", c.sig)
			continue
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "SIG%s to PID 1", c.sig)
		assert.NotZero(t, ee.ExitCode(), "SIG%s to PID 1", c.sig)
	}
}

// egressEchoServer answers every line on a host loopback port with "echo: LINE".
func egressEchoServer(t *testing.T) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go acceptEach(l, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "echo: %s", line)
	})
	return l, l.Addr().(*net.TCPAddr).Port
}

func egressFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRunInitRelaysForwardedPort relays a loopback port through the init
// helper and the Egress forward socket to a host listener. Outside a network
// namespace the inner port cannot equal the host one, so a free port stands
// in for it here; escape_net_test.go runs the same path under bwrap.
func TestRunInitRelaysForwardedPort(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash (for /dev/tcp) is not installed")
	}
	_, port := egressEchoServer(t)
	e := startEgress(t, EgressConfig{ForwardPorts: []int{port}})
	dir, _ := e.Mounts()
	inner := egressFreePort(t)
	script := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo hello >&3 && read -r line <&3 && echo "$line"`, inner)
	cmd := initCmd(t, "-forward", "127.0.0.1:"+strconv.Itoa(inner)+"="+filepath.Join(dir, portSocket(port)), "--", bash, "-c", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Equal(t, "echo: hello\n", stdout.String())

	// A port without a forward socket reaches nothing.
	other := egressFreePort(t)
	cmd = initCmd(t, "-forward", "127.0.0.1:"+strconv.Itoa(other)+"="+filepath.Join(dir, portSocket(port+1)), "--", bash, "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo hello >&3 && read -r -t 5 line <&3 && echo "$line"`, other))
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	assert.Error(t, cmd.Run())
	assert.Empty(t, strings.TrimSpace(stdout.String()))
	assert.Contains(t, stderr.String(), "relay: dial unix")
}

func TestRunInitFailsWhenPortTaken(t *testing.T) {
	l, port := egressEchoServer(t)
	_ = l
	start := time.Now()
	err := initCmd(t, "-forward", "127.0.0.1:"+strconv.Itoa(port)+"=/nonexistent.sock", "--", "true").Run()
	assert.Equal(t, 1, initExitCode(t, err))
	assert.Less(t, time.Since(start), 10*time.Second)
}

// TestRunInitAsPID1ReapsOrphans runs the init helper as the sandbox's PID 1
// (bwrap --as-pid-1): an orphaned grandchild must be reaped, not left a
// zombie, and the command's status must still come back.
func TestRunInitAsPID1ReapsOrphans(t *testing.T) {
	bwrap := requireBwrapNet(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	script := `(sh -c 'exit 0' &); sleep 0.3; ` +
		`echo "init=$(cat /proc/1/comm)"; ` +
		`grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l; exit 5`
	cmd := exec.CommandContext(t.Context(), bwrap, "--unshare-all", "--unshare-user", "--as-pid-1", "--die-with-parent",
		"--cap-drop", "ALL", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev",
		"--ro-bind", exe, "/init", "/init", InitArg, "--", "bash", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	assert.Equal(t, 5, initExitCode(t, err), "stderr: %s", stderr.String())
	lines := strings.Fields(stdout.String())
	require.Len(t, lines, 2, stdout.String())
	assert.Equal(t, "init=init", lines[0], "the helper must be PID 1")
	assert.Equal(t, "0", lines[1], "zombies left behind")
}

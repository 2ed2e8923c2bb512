package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/sandboxinit"
)

// serviceArg makes the test binary a slow-starting service: it prints
// "service starting" on stdout, waits DELAY milliseconds, then listens on
// 127.0.0.1:PORT and answers each line with "svc: LINE".
const serviceArg = "__sandbox-test-service"

func runService(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: __sandbox-test-service PORT DELAY_MS")
		return 2
	}
	delay, _ := strconv.Atoi(args[1])
	fmt.Println("service starting")
	time.Sleep(time.Duration(delay) * time.Millisecond)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", args[0]))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				fmt.Fprintf(c, "svc: %s\n", sc.Text())
			}
		}()
	}
}

// talk is a client script: it connects to 127.0.0.1:port at once, sends
// "hi" and prints the first line it gets back.
func talk(port int) string {
	return fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d || exit 9; echo hi >&3; read -r -t 20 line <&3; echo "$line"`, port)
}

func runWithServices(t *testing.T, sb *Sandbox, script string, services ...Service) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var o, e bytes.Buffer
	c := sb.Command(ctx, "bash", "-c", script)
	c.Services = services
	c.Stdout, c.Stderr = &o, &e
	err = c.Run()
	return o.String(), e.String(), err
}

// TestServiceStartsBesideTheCommand starts a service that only listens
// after 400 ms, beside a client that connects at once: the client's
// connection waits for the service instead of being refused, the service's
// stdout stays off the command's stdout, and no service outlives the
// command.
func TestServiceStartsBesideTheCommand(t *testing.T) {
	needBwrap(t)
	bin := testBinary(t)
	sb := openSandbox(t, Policy{ReadOnly: []string{bin}})
	svc := Service{Args: []string{bin, serviceArg, "7001", "400"}, Port: 7000, Backend: 7001}
	start := time.Now()
	out, errOut, err := runWithServices(t, sb, talk(7000), svc)
	require.NoError(t, err, errOut)
	assert.Equal(t, "svc: hi\n", out, "only the command's own output on stdout")
	assert.Contains(t, errOut, "service starting", "the service's stdout goes to stderr")
	assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)

	// Connecting to the backend directly, before it listens, is refused:
	// the wait above came from the init's relay, not from the client.
	out, _, err = runWithServices(t, sb, talk(7001), svc)
	assert.Error(t, err)
	assert.Empty(t, out)
}

func TestServiceEndsWithTheCommand(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	marker := "8126.25"
	svc := Service{Args: []string{"sleep", marker}, Port: 7000, Backend: 7001}
	out, errOut, err := runWithServices(t, sb, "echo done", svc)
	require.NoError(t, err, errOut)
	assert.Equal(t, "done\n", out)
	waitForProcess(t, marker, false)
}

// TestServiceThatDiesClosesWaitingConnections: a service that exits
// without listening must not leave its clients waiting forever.
func TestServiceThatDiesClosesWaitingConnections(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	svc := Service{Args: []string{"sh", "-c", "sleep 0.2; exit 3"}, Port: 7000, Backend: 7001}
	start := time.Now()
	out, errOut, err := runWithServices(t, sb, talk(7000)+`; echo "got [$line]"`, svc)
	require.NoError(t, err, errOut)
	assert.Equal(t, "\ngot []\n", out)
	assert.Contains(t, errOut, "the service has exited")
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestServiceRefusesBadPorts(t *testing.T) {
	needBwrap(t)
	e := startEgress(t, EgressConfig{})
	sb := openSandbox(t, Policy{Egress: e})
	cases := map[string]Service{
		"no command":      {Port: 7000, Backend: 7001},
		"same port":       {Args: []string{"true"}, Port: 7000, Backend: 7000},
		"out of range":    {Args: []string{"true"}, Port: 0, Backend: 7001},
		"the proxy's":     {Args: []string{"true"}, Port: DefaultProxyPort, Backend: 7001},
		"another service": {Args: []string{"true"}, Port: 7002, Backend: 7001},
	}
	for name, svc := range cases {
		c := sb.Command(t.Context(), "true")
		c.Services = []Service{svc}
		if name == "another service" {
			c.Services = []Service{{Args: []string{"true"}, Port: 7000, Backend: 7001}, svc}
		}
		assert.Error(t, c.Run(), name)
	}
}

// TestServiceStopsGracefully: a service gets SIGTERM when the command
// exits and may finish its work; one that ignores it is killed after the
// grace period.
func TestServiceStopsGracefully(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	graceful := Service{Args: []string{"sh", "-c", `trap 'echo flushed >&2; exit 0' TERM; while :; do sleep 0.05; done`}, Port: 7000, Backend: 7001}
	_, errOut, err := runWithServices(t, sb, "sleep 0.2", graceful)
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "flushed")

	stubborn := Service{Args: []string{"sh", "-c", `trap '' TERM; while :; do sleep 0.05; done`}, Port: 7000, Backend: 7001}
	start := time.Now()
	_, errOut, err = runWithServices(t, sb, "sleep 0.2", stubborn)
	require.NoError(t, err, errOut)
	assert.GreaterOrEqual(t, time.Since(start), sandboxinit.ServiceGrace, "killed only after the grace period")
	assert.Less(t, time.Since(start), sandboxinit.ServiceGrace+10*time.Second)
}

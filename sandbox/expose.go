package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"strings"
	"time"
)

// Expose makes a TCP server that the command starts inside the sandbox
// reachable from the host without any TCP port outside: the init listens
// on a unix socket in HomeDir, which the host reaches at the same name in
// Sandbox.Home(), and relays each connection to 127.0.0.1:Port inside,
// waiting while nothing listens there yet. Only processes that can open
// that path connect: the launcher, and a sandbox it relays the socket to
// (EgressConfig.ForwardSockets), never a process dialling a port.
//
// The socket is created by the sandbox's user in its per-agent directory
// (mode 0600), so it needs /tmp on that directory: Expose with
// Limits.TmpSize is refused.
type Expose struct {
	// Name is the socket's file name in HomeDir.
	Name string `json:"name"`
	// Port is the loopback port inside that connections are relayed to.
	Port int `json:"port"`
}

// exposeArgs appends c's Expose entries to the init's arguments.
func (s *Sandbox) exposeArgs(c *Cmd, initArgs []string) ([]string, error) {
	names := map[string]bool{}
	for _, e := range c.Expose {
		switch {
		case e.Name == "" || strings.ContainsAny(e.Name, "/=\x00") || e.Name == "." || e.Name == "..":
			return nil, fmt.Errorf("sandbox: exposed socket name %q: want a plain file name", e.Name)
		case e.Port < 1 || e.Port > 65535:
			return nil, fmt.Errorf("sandbox: exposed socket %s: port %d out of range", e.Name, e.Port)
		case names[e.Name]:
			return nil, fmt.Errorf("sandbox: exposed socket %s listed twice", e.Name)
		case s.policy.Limits.TmpSize > 0:
			return nil, errors.New("sandbox: Expose needs /tmp on the per-agent directory; it cannot be used with Limits.TmpSize")
		}
		names[e.Name] = true
		initArgs = append(initArgs, "-expose", path.Join(HomeDir, e.Name)+"="+loopback(e.Port))
	}
	return initArgs, nil
}

// listenExposed is the init's half of Expose: it listens on each socket
// of exposed (-expose SOCKET=ADDR, the same form as -forward) and relays
// its connections to ADDR, retrying the dial until something listens there
// or done is closed.
func listenExposed(exposed forwardFlag, done <-chan struct{}) ([]net.Listener, error) {
	var ls []net.Listener
	for _, e := range exposed {
		os.Remove(e.socket) // a socket left by an earlier command of this sandbox
		l, err := net.Listen("unix", e.socket)
		if err == nil {
			err = os.Chmod(e.socket, 0o600)
		}
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, fmt.Errorf("expose %s: %w", e.socket, err)
		}
		ls = append(ls, l)
		go acceptRelays(l, dialUntil(e.addr, done))
	}
	return ls, nil
}

// dialUntil dials a TCP address inside the sandbox, retrying while nothing
// listens there yet; it gives up once done is closed.
func dialUntil(addr string, done <-chan struct{}) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		for {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				return c, nil
			}
			select {
			case <-done:
				return nil, fmt.Errorf("%s: the command has exited", addr)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// exposeFlag parses -expose SOCKET=ADDR into a forwardFlag (the reverse
// direction of -forward ADDR=SOCKET).
type exposeFlag struct{ f *forwardFlag }

func (e exposeFlag) String() string {
	if e.f == nil {
		return ""
	}
	return e.f.String()
}

func (e exposeFlag) Set(s string) error {
	socket, addr, ok := strings.Cut(s, "=")
	if !ok || socket == "" || addr == "" {
		return fmt.Errorf("want SOCKET=ADDR, got %q", s)
	}
	return e.f.Set(addr + "=" + socket)
}

package sandbox

import (
	"errors"
	"fmt"
	"path"
	"strings"
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

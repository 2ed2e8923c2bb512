// Package sandboxinit is the init of pairbench's sandboxes: the program
// every sandboxed command starts under, as the sandbox's PID 1 (see Run).
// It is a package of its own, importing little beyond the standard
// library, so that the binary serving as the init (cmd/pairbench-sandbox-init)
// starts fast: every launch waits for its start-up. The sandbox package
// builds its arguments; docs/sandbox.md describes what it does and why.
package sandboxinit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Arg is the first argument that turns a binary into the sandbox's init:
// its main (pairbench's, pairbench-sandbox-init's, and every TestMain in a
// package that launches sandboxes) must call os.Exit(Run(os.Args[2:])) when
// os.Args[1] == Arg.
const Arg = "__sandbox-init"

// forwardFlag collects repeated -forward ADDR=SOCKET arguments.
type forwardFlag []forward

// forward relays TCP connections accepted on addr (inside the sandbox) to the
// unix socket at socket (bound in from the host).
type forward struct{ addr, socket string }

func (f *forwardFlag) String() string { return fmt.Sprint(*f) }

func (f *forwardFlag) Set(s string) error {
	addr, socket, ok := strings.Cut(s, "=")
	if !ok || addr == "" || socket == "" {
		return fmt.Errorf("want ADDR=SOCKET, got %q", s)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	*f = append(*f, forward{addr: addr, socket: socket})
	return nil
}

// serviceFlag collects repeated -service arguments, each a Service in JSON.
type serviceFlag []Service

func (f *serviceFlag) String() string { return fmt.Sprint(*f) }

func (f *serviceFlag) Set(s string) error {
	var svc Service
	if err := json.Unmarshal([]byte(s), &svc); err != nil {
		return fmt.Errorf("service %q: %w", s, err)
	}
	if err := svc.Check(); err != nil {
		return err
	}
	*f = append(*f, svc)
	return nil
}

// Run is the sandbox's init. It runs inside the sandbox as
//
//	pairbench __sandbox-init [-forward 127.0.0.1:PORT=/path/to.sock ...] [-service JSON ...]
//		[-expose /path/to.sock=127.0.0.1:PORT ...] [-fd N ...] [-lifeline N] [-unsetenv NAME ...] -- CMD ARGS...
//
// Every -unsetenv variable was meant for the init alone (GOMAXPROCS, read
// by the runtime as it started): it is removed from the environment before
// anything else starts.
// It listens on every -forward address and relays each accepted connection
// to the matching unix socket. For every -service (a Service in JSON) it
// listens on 127.0.0.1:Port, starts the service with stdin from /dev/null
// and stdout and stderr on its own stderr, and relays each connection on
// Port to 127.0.0.1:Backend, waiting until the service listens there.
// For every -expose it listens on the unix socket and relays each
// connection to the TCP address, waiting until CMD listens there. Then it
// starts CMD, with the -fd descriptors as its descriptors 3, 4, ..., as a child with the inherited environment, stdin,
// stdout and stderr, stops
// the services when CMD exits (SIGTERM, then SIGKILL ServiceGrace later),
// and returns CMD's exit status (128+signal when the child was killed by a
// signal). Run as PID 1 (bwrap --as-pid-1) it also reaps orphaned
// descendants. With -lifeline N it exits, ending the sandbox, once N reads
// end of file (watchLifeline). It returns 2 for bad arguments, 1 when a listener cannot be
// set up, and 127 (or 126) when CMD or a service cannot be started. The
// relays stop when RunInit returns; the caller exits right after.
//
// It forwards no signals and handles none: nothing outside a sandbox
// signals its PID 1 but the launcher, with SIGKILL, and os/signal would
// cost every launch two more runtime threads (see docs/sandbox.md, Launch
// cost). A signal a process of the sandbox sends it ends the init, and
// with it the sandbox, as the Go runtime ends any program on it.
func Run(args []string) int {
	fs := flag.NewFlagSet(Arg, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var fwd forwardFlag
	var services serviceFlag
	var exposed forwardFlag
	var fds fdFlag
	var limits rlimitFlag
	var unset unsetFlag
	lifeline := -1
	fs.Var(&fwd, "forward", "`ADDR=SOCKET`: relay TCP connections on ADDR to the unix socket SOCKET (repeatable)")
	fs.Var(&services, "service", "`JSON`: a service to start beside the command (repeatable)")
	fs.Var(exposeFlag{&exposed}, "expose", "`SOCKET=ADDR`: relay connections on the unix socket SOCKET to the command's TCP address ADDR (repeatable)")
	fs.Var(&fds, "fd", "`N`: give descriptor N to the command, as its next descriptor from 3 (repeatable)")
	fs.Var(&limits, "rlimit", "`NAME=N`: set resource limit NAME (nproc, data, fsize, core) to N before anything starts (repeatable)")
	fs.Var(&unset, "unsetenv", "`NAME`: remove NAME, set for the init alone, from the environment before anything starts (repeatable)")
	fs.IntVar(&lifeline, "lifeline", -1, "`N`: end the sandbox once descriptor N, the read end of a pipe only the launcher can write to, reads end of file (see watchLifeline)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		fmt.Fprintf(os.Stderr, "%s: no command after --\n", Arg)
		return 2
	}
	for _, name := range unset {
		os.Unsetenv(name)
	}
	keep := fds
	if lifeline >= 0 {
		keep = append(slices.Clone(fds), lifeline)
	}
	if err := guardInit(keep); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Arg, err)
		return 1
	}
	if lifeline >= 0 {
		watchLifeline(lifeline)
	}
	if err := limits.apply(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Arg, err)
		return 1
	}

	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for _, f := range fwd {
		l, err := listenTCP(f.addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", Arg, err)
			return 1
		}
		listeners = append(listeners, l)
		go AcceptRelays(l, DialUnix(f.socket))
	}
	var running []runningService
	defer func() { stopServices(running) }()
	for _, svc := range services {
		l, err := listenTCP(loopback(svc.Port))
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: service %s: %v\n", Arg, svc.Args[0], err)
			return 1
		}
		listeners = append(listeners, l)
		cmd := exec.Command(svc.Args[0], svc.Args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr // stdout belongs to CMD
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: service: %v\n", Arg, err)
			return startFailure(err)
		}
		ended := make(chan struct{})
		go func() {
			cmd.Wait() // as PID 1, reapUntil may reap it first; either way it ended
			close(ended)
		}()
		running = append(running, runningService{cmd.Process, ended})
		go AcceptRelays(l, dialService(loopback(svc.Backend), ended))
	}

	done := make(chan struct{})
	defer close(done)
	ls, err := listenExposed(exposed, done)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Arg, err)
		return 1
	}
	listeners = append(listeners, ls...)

	return runChild(cmdArgs, childFiles(fds))
}

// watchLifeline ends the init, and with it the sandbox, once fd reads end
// of file. fd is the read end of a pipe whose write end the launcher alone
// holds: end of file means the launcher has gone, however it died, even
// before the init ran (it then reads end of file at once). As the
// sandbox's PID 1 the init's exit kills every process in its namespace.
// Nothing the command does can delay it: it may hold the read end too
// (it never gets it), but never the write end.
func watchLifeline(fd int) {
	syscall.CloseOnExec(fd) // nothing the init starts gets it
	// Non-blocking, the runtime's poller waits on it: no thread of its own.
	syscall.SetNonblock(fd, true)
	f := os.NewFile(uintptr(fd), "lifeline")
	go func() {
		b := make([]byte, 1)
		for {
			if _, err := f.Read(b); err != nil {
				os.Exit(lifelineExit) // io.EOF, or a pipe unreadable for good
			}
		}
	}()
}

// lifelineExit is the init's exit status once its lifeline broke.
const lifelineExit = 125

// ServiceGrace is how long services have to exit after SIGTERM (Node, for
// one, writes its compile cache as it exits) before they are killed.
const ServiceGrace = 2 * time.Second

// runningService is a started service and a channel closed once it ended.
type runningService struct {
	proc  *os.Process
	ended <-chan struct{}
}

// stopServices sends every service SIGTERM, then kills those still
// running ServiceGrace later.
func stopServices(services []runningService) {
	for _, s := range services {
		s.proc.Signal(syscall.SIGTERM)
	}
	grace := time.NewTimer(ServiceGrace)
	defer grace.Stop()
	expired := false
	for _, s := range services {
		if !expired {
			select {
			case <-s.ended:
				continue
			case <-grace.C:
				expired = true
			}
		}
		s.proc.Kill()
	}
}

// startFailure is the exit status for a command that could not be started.
func startFailure(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}

// AcceptRelays accepts connections on l until it is closed and relays each
// one to the connection dial returns.
func AcceptRelays(l net.Listener, dial func() (net.Conn, error)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := dial()
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: relay: %v\n", Arg, err)
				return
			}
			defer u.Close()
			Pipe(c, u)
		}()
	}
}

// DialUnix returns a dialer of the unix socket at path.
func DialUnix(path string) func() (net.Conn, error) {
	return func() (net.Conn, error) { return net.Dial("unix", path) }
}

// dialService dials a service's backend address, retrying while the
// service is still starting; it gives up once the service has ended.
func dialService(backend string, ended <-chan struct{}) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		for {
			c, err := net.Dial("tcp", backend)
			if err == nil {
				return c, nil
			}
			select {
			case <-ended:
				return nil, fmt.Errorf("%s: the service has exited", backend)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// closeWriter is implemented by connections that can half-close.
type closeWriter interface{ CloseWrite() error }

// Pipe copies a→b and b→a, half-closing each direction as it ends, and
// returns when both directions are done.
func Pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(closeWriter); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go copyHalf(a, b)
	go copyHalf(b, a)
	wg.Wait()
}

// runChild starts args as a child with extra as its descriptors 3, 4, ...
// and returns its exit status.
func runChild(args []string, extra []uintptr) int {
	pid, err := startChild(args, extra)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Arg, err)
		return startFailure(err)
	}
	if os.Getpid() == 1 {
		// As the namespace's PID 1 (bwrap --as-pid-1) orphans are ours to reap.
		return reapUntil(-1, pid)
	}
	return reapUntil(pid, pid)
}

// startChild starts args (args[0] looked up in PATH unless it holds a
// slash) with the init's environment, standard input, output and error,
// and extra as its descriptors 3, 4, .... It forks and executes directly:
// os.StartProcess first forks a child of its own, once per process, to
// check that the kernel's pidfds work, and every launch would wait for it.
func startChild(args []string, extra []uintptr) (int, error) {
	path := args[0]
	if !strings.Contains(path, "/") {
		var err error
		if path, err = exec.LookPath(path); err != nil {
			return 0, err
		}
	}
	fds := append([]uintptr{0, 1, 2}, extra...)
	pid, err := syscall.ForkExec(path, args, &syscall.ProcAttr{Env: os.Environ(), Files: fds})
	if err != nil {
		return 0, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return pid, nil
}

// reapUntil waits for children matching wpid (wait4's: -1 for any, so
// that orphaned descendants do not linger as zombies) until pid exits, and
// returns pid's exit status: 128+signal when a signal killed it.
func reapUntil(wpid, pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(wpid, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			fmt.Fprintf(os.Stderr, "%s: wait: %v\n", Arg, err)
			return 126
		case got != pid:
			continue
		case ws.Signaled():
			return 128 + int(ws.Signal())
		default:
			return ws.ExitStatus()
		}
	}
}

// guardInit runs before anything else of the sandbox does. It makes the
// init undumpable: its /proc entries (mem, fd, environ, maps) become the
// kernel's, and neither ptrace, process_vm_* nor pidfd_getfd may touch it
// from a process of the same user, so the agent cannot take over the
// sandbox's PID 1 (and with it the lifeline that ends the sandbox with
// its launcher). Then it closes every descriptor it inherited (any without
// close-on-exec: whatever the launcher held open, and the binary it was
// started from) but keep: the command's and the lifeline.
func guardInit(keep fdFlag) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the init undumpable: %w", err)
	}
	return closeInherited(keep)
}

// closeInherited closes every descriptor from 3 on that lacks close-on-exec
// (Go opens all of its own with it, so these are the inherited ones), but
// those in keep.
func closeInherited(keep fdFlag) error {
	dir, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list inherited descriptors: %w", err)
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return fmt.Errorf("list inherited descriptors: %w", err)
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd < 3 || slices.Contains(keep, fd) {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // gone (the directory's own), or opened by the init itself
		}
		unix.Close(fd)
	}
	return nil
}

// rlimits are the limits -rlimit may set, by name.
var rlimits = map[string]int{
	"nproc": unix.RLIMIT_NPROC, "data": unix.RLIMIT_DATA, "fsize": unix.RLIMIT_FSIZE, "core": unix.RLIMIT_CORE,
}

// rlimitFlag collects the init's repeated -rlimit NAME=N arguments.
type rlimitFlag map[int]uint64

func (f *rlimitFlag) String() string { return fmt.Sprint(*f) }

func (f *rlimitFlag) Set(s string) error {
	name, v, ok := strings.Cut(s, "=")
	res, known := rlimits[name]
	n, err := strconv.ParseUint(v, 10, 64)
	if !ok || !known || err != nil {
		return fmt.Errorf("-rlimit %q: want NAME=N with NAME one of nproc, data, fsize, core", s)
	}
	if *f == nil {
		*f = rlimitFlag{}
	}
	(*f)[res] = n
	return nil
}

// apply lowers each limit (soft and hard) to its value; a limit already
// lower stays.
func (f rlimitFlag) apply() error {
	for res, n := range f {
		var cur unix.Rlimit
		if err := unix.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("read a resource limit: %w", err)
		}
		lim := unix.Rlimit{Cur: min(n, cur.Cur), Max: min(n, cur.Max)}
		if err := unix.Setrlimit(res, &lim); err != nil {
			return fmt.Errorf("set a resource limit: %w", err)
		}
	}
	return nil
}

// Service is a server a Cmd talks to over the sandbox's loopback. The init
// listens on 127.0.0.1:Port before anything starts and relays each
// connection to 127.0.0.1:Backend, where the service listens once it is
// up: a client connecting early waits instead of being refused.
type Service struct {
	Args    []string `json:"args"`
	Port    int      `json:"port"`
	Backend int      `json:"backend"`
}

// Check refuses a Service without a command or with ports out of range.
func (s Service) Check() error {
	switch {
	case len(s.Args) == 0 || s.Args[0] == "":
		return errors.New("service without a command")
	case s.Port < 1 || s.Port > 65535 || s.Backend < 1 || s.Backend > 65535:
		return fmt.Errorf("service %s: ports %d and %d: want 1-65535", s.Args[0], s.Port, s.Backend)
	case s.Port == s.Backend:
		return fmt.Errorf("service %s: Port and Backend are both %d", s.Args[0], s.Port)
	}
	return nil
}

// listenTCP listens on the TCP address addr inside the sandbox, with plain
// TCP: the sandbox's clients reach it over its own loopback, where
// Multipath TCP (net's default for listeners) would only cost a probe and
// the fallback of every connection.
func listenTCP(addr string) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	return lc.Listen(context.Background(), "tcp", addr)
}

// loopback returns 127.0.0.1:port.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

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
		go AcceptRelays(l, dialUntil(e.addr, done))
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

// unsetFlag collects the init's repeated -unsetenv NAME arguments.
type unsetFlag []string

func (f *unsetFlag) String() string { return fmt.Sprint(*f) }

func (f *unsetFlag) Set(s string) error {
	if s == "" || strings.ContainsAny(s, "=\x00") {
		return fmt.Errorf("-unsetenv %q: want a variable name", s)
	}
	*f = append(*f, s)
	return nil
}

// fdFlag collects the init's repeated -fd N arguments.
type fdFlag []int

func (f *fdFlag) String() string { return fmt.Sprint(*f) }

func (f *fdFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 3 {
		return fmt.Errorf("-fd %q: want a descriptor number of 3 or more", s)
	}
	*f = append(*f, n)
	return nil
}

// childFiles takes the init's -fd descriptors for the command: none of
// them reaches anything else the init starts. They stay plain numbers,
// never an *os.File: once nothing refers to a File, its finalizer may close
// the descriptor, and a collection between that and the fork made the
// command's start fail with EBADF.
func childFiles(fds fdFlag) []uintptr {
	files := make([]uintptr, len(fds))
	for i, fd := range fds {
		syscall.CloseOnExec(fd)
		files[i] = uintptr(fd)
	}
	return files
}

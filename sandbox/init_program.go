package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench/internal/sandboxinit"
)

// InitProgram is the sandbox's init as a program of its own
// (cmd/pairbench-sandbox-init), installed beside the launcher's binary.
// Every sandboxed command starts under the init, so its start-up is part of
// every launch: a small static program starts in about a millisecond, where
// the launcher's own binary first initialises every package it links (some
// 15 ms of CPU for pairbench). make build and the Action install both.
const InitProgram = sandboxinit.Program

// executable opens the init's binary: path, or with path empty the default
// init (see defaultInit). The sandbox starts it from the descriptor.
func executable(path string) (*os.File, error) {
	if path == "" {
		path = "/proc/self/exe" // the running binary, whatever its directory's permissions
		if f, _ := defaultInit(); f != nil {
			// A description of its own (offset and all) of the program
			// checked once, even if its path has been replaced since.
			path = "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: init binary: %w", err)
	}
	return f, nil
}

// defaultInit is InitProgram beside the running binary, opened and checked
// once per process (openInitProgram), or nil and why there is none to
// trust: the running binary is then the init.
var defaultInit = sync.OnceValues(func() (*os.File, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return openInitProgram(self)
})

// describeInit says which binary a sandbox with Policy.Executable path
// starts its commands under, and why not InitProgram when it is not.
func describeInit(path string) string {
	if path != "" {
		return path
	}
	f, err := defaultInit()
	if f != nil {
		return f.Name()
	}
	return fmt.Sprintf("the running binary, slower to start than %s (%v)", InitProgram, err)
}

// openInitProgram opens InitProgram beside the binary self, when it may
// stand in for self (initProgramTrusted).
func openInitProgram(self string) (*os.File, error) {
	f, err := os.Open(filepath.Join(filepath.Dir(self), InitProgram))
	if err != nil {
		return nil, err
	}
	if err := initProgramTrusted(f, self); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ProtocolArg makes InitProgram print its InitProtocol and exit.
const ProtocolArg = sandboxinit.ProtocolArg

// InitProtocol identifies the init's arguments and behaviour (a digest of
// its source): two binaries whose inits could differ never have the same
// one.
func InitProtocol() string { return sandboxinit.Protocol() }

// initProgramTrusted checks that the opened init program f may stand in
// for the running binary self: an executable regular file of self's owner
// that nobody else may write, in a directory nobody else may write (it runs
// as the launcher to answer the next check), that speaks the same init
// protocol (InitProtocol) as self.
func initProgramTrusted(f *os.File, self string) error {
	var st, selfSt, dirSt unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if err := unix.Stat(self, &selfSt); err != nil {
		return err
	}
	if err := unix.Stat(filepath.Dir(f.Name()), &dirSt); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", f.Name())
	case st.Uid != selfSt.Uid || st.Mode&0o022 != 0:
		return fmt.Errorf("%s is not %s's owner's alone", f.Name(), self)
	case dirSt.Mode&0o022 != 0:
		return fmt.Errorf("the directory of %s is writable by others", f.Name())
	}
	// Run the very file checked, from its descriptor.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/fd/3", ProtocolArg)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s %s: %w", f.Name(), ProtocolArg, err)
	}
	if got, want := strings.TrimSpace(string(out)), InitProtocol(); got != want {
		return fmt.Errorf("%s speaks init protocol %q, %s %q: another build", f.Name(), got, self, want)
	}
	return nil
}

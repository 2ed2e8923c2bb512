package sandbox

import (
	"strconv"

	"github.com/pairbench/pairbench/internal/sandboxinit"
)

// InitArg is the first argument that turns a binary into the sandbox's
// init. main (and every TestMain in a package that launches sandboxes)
// must call os.Exit(RunInit(os.Args[2:])) when os.Args[1] == InitArg.
const InitArg = sandboxinit.Arg

// RunInit is the sandbox's init (internal/sandboxinit's Run): run inside
// the sandbox as PID 1, it relays the egress, services and exposed sockets,
// guards itself, sets the rlimits, starts the command and returns its exit
// status.
func RunInit(args []string) int { return sandboxinit.Run(args) }

// Service is a server a Cmd talks to over the sandbox's loopback (see
// internal/sandboxinit).
type Service = sandboxinit.Service

// rlimitArgs returns the init's -rlimit arguments for l (with its defaults
// applied): the sandbox's processes and threads (RLIMIT_NPROC counts those
// of the sandbox's user in its own user namespace, so the limit is the
// sandbox's whatever the launcher), memory and file size per process, and
// no core dumps.
func rlimitArgs(l Limits) []string {
	return []string{
		"-rlimit", "nproc=" + strconv.Itoa(l.Pids),
		"-rlimit", "data=" + strconv.FormatInt(l.Memory, 10),
		"-rlimit", "fsize=" + strconv.FormatInt(l.FileSize, 10),
		"-rlimit", "core=0",
	}
}

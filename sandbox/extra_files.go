package sandbox

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// extraFileArgs appends a copy of each of extra to files (bubblewrap passes
// every descriptor it inherits on to the init) and asks the init, with one
// -fd per file, to give them to the command as descriptors 3, 4, ... in
// order. files are bubblewrap's from descriptor firstFileFD on.
func extraFileArgs(extra []*os.File, initArgs []string, files []*os.File) ([]string, []*os.File, error) {
	for _, f := range extra {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return initArgs, files, fmt.Errorf("sandbox: extra file %s: %w", f.Name(), err)
		}
		files = append(files, os.NewFile(uintptr(fd), f.Name()))
		initArgs = append(initArgs, "-fd", strconv.Itoa(firstFileFD+len(files)-1))
	}
	return initArgs, files, nil
}

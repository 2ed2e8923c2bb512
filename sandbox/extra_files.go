package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

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

// inheritedFiles takes the init's -fd descriptors for the command: none of
// them reaches anything else the init starts.
func inheritedFiles(fds fdFlag) []*os.File {
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		syscall.CloseOnExec(fd)
		files[i] = os.NewFile(uintptr(fd), "fd-"+strconv.Itoa(fd))
	}
	return files
}

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A workspace that is a git repository is one a host git will later run
// in: its configuration can make git run programs (core.fsmonitor,
// core.hooksPath, filter and diff drivers, aliases), its hooks are
// programs, and a commondir or gitdir file can point git at configuration
// elsewhere in the workspace. So the repository's .git, and each
// submodule's, is mounted read-only over itself: the agent reads history
// but can change nothing in it, and, a mount point being impossible to
// rename or remove, cannot move it aside for one of its own either.
//
// What the launcher reads and mounts there, a live workspace's agent
// wrote in an earlier run: each path is opened below the workspace
// without following any link (a submodule path through a link to ".."
// would mount the host's repository around the workspace inside), the
// mount's source is that descriptor, not the path (another sandbox on the
// same workspace cannot swap a directory for a link in between), and
// .gitmodules is read only when it is a regular file, at most
// maxGitmodules bytes of it (a FIFO there would block the launcher for
// good).

// maxGitmodules bounds what is read of a workspace's .gitmodules.
const maxGitmodules = 1 << 20

// gitMounts returns bubblewrap's options that make workspace's .git and
// its submodules' read-only inside, and the descriptors they name, to be
// passed as fd, fd+1, ... A .git that is a link is refused: the agent
// could point the link anywhere a later git would follow. A submodule
// whose path goes through a link is left out: its .git is not in the
// workspace.
func gitMounts(workspace string, fd int) (opts []string, files []*os.File, err error) {
	root, err := os.OpenFile(workspace, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	defer root.Close()
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			opts, files = nil, nil
		}
	}()
	rels := []string{".git"}
	subs, err := submodulePaths(root)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range subs {
		rels = append(rels, path.Join(p, ".git"))
	}
	for i, rel := range rels {
		f, st, err := openBelow(root, rel)
		switch {
		case f == nil && err == nil: // not there, or through a link
			continue
		case err != nil:
			return opts, files, fmt.Errorf("sandbox: workspace: %w", err)
		case st.Mode&unix.S_IFMT == unix.S_IFLNK && i == 0:
			f.Close()
			return opts, files, fmt.Errorf("sandbox: workspace: %s is a symbolic link; the agent could point it anywhere a later git would follow (mount the repository itself)",
				filepath.Join(workspace, rel))
		case st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFREG:
			f.Close()
			continue
		}
		files = append(files, f)
		opts = append(opts, "--ro-bind-fd", strconv.Itoa(fd+len(files)-1), path.Join(WorkspaceDir, rel))
	}
	return opts, files, nil
}

// openBelow opens rel (slash-separated, clean, relative) below the
// directory root as an O_PATH descriptor, following no link on the way:
// it returns nil and no error when some element is missing or a link (the
// last element may be a link: it is opened as the link itself).
func openBelow(root *os.File, rel string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	dir := int(root.Fd())
	elems := strings.Split(rel, "/")
	for i, name := range elems {
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(elems)-1 {
			flags |= unix.O_DIRECTORY
		}
		fd, err := unix.Openat(dir, name, flags, 0)
		if dir != int(root.Fd()) {
			unix.Close(dir)
		}
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return nil, st, nil
		}
		if err != nil {
			return nil, st, fmt.Errorf("open %s: %w", rel, err)
		}
		dir = fd
	}
	if err := unix.Fstat(dir, &st); err != nil {
		unix.Close(dir)
		return nil, st, fmt.Errorf("stat %s: %w", rel, err)
	}
	return os.NewFile(uintptr(dir), rel), st, nil
}

// submodulePaths returns the path = entries of root's .gitmodules that
// stay inside the workspace; none when there is no such regular file.
func submodulePaths(root *os.File) ([]string, error) {
	fd, err := unix.Openat(int(root.Fd()), ".gitmodules", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace: .gitmodules: %w", err)
	}
	f := os.NewFile(uintptr(fd), ".gitmodules")
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, err
	}
	var paths []string
	sc := bufio.NewScanner(io.LimitReader(f, maxGitmodules))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.TrimSpace(k) != "path" {
			continue
		}
		p := path.Clean(strings.Trim(strings.TrimSpace(v), `"`))
		if p == "." || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			continue
		}
		paths = append(paths, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: workspace: .gitmodules: %w", err)
	}
	return paths, nil
}

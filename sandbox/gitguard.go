package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// A workspace that is a git repository is one a host git will later run
// in: its configuration can make git run programs (core.fsmonitor,
// core.hooksPath, filter and diff drivers, aliases), its hooks are
// programs, and a commondir or gitdir file can point git at configuration
// elsewhere in the workspace. So the repository's .git, and each
// submodule's, is mounted read-only over itself: the agent reads history
// but can change nothing in it, and, a mount point being impossible to
// rename or remove, cannot move it aside for one of its own either.

// gitMounts returns bubblewrap's options that make workspace's .git and
// its submodules' read-only inside. A .git that is a link is refused: the
// agent could point the link anywhere a later git would follow it.
func gitMounts(workspace string) ([]string, error) {
	rels := []string{".git"}
	subs, err := submodulePaths(filepath.Join(workspace, ".gitmodules"))
	if err != nil {
		return nil, err
	}
	for _, p := range subs {
		rels = append(rels, path.Join(p, ".git"))
	}
	var a []string
	for _, rel := range rels {
		host := filepath.Join(workspace, filepath.FromSlash(rel))
		fi, err := os.Lstat(host)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("sandbox: workspace: %w", err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("sandbox: workspace: %s is a symbolic link; the agent could point it anywhere a later git would follow (mount the repository itself)", host)
		case !fi.IsDir() && !fi.Mode().IsRegular():
			continue
		}
		a = append(a, "--ro-bind", host, path.Join(WorkspaceDir, rel))
	}
	return a, nil
}

// submodulePaths returns the path = entries of a .gitmodules file that
// stay inside the workspace; none when there is no such file.
func submodulePaths(file string) ([]string, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
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
	return paths, sc.Err()
}

package sandbox

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// filesRefused are the trees Policy.Files may not place a file in: the
// sandbox's writable directories (a file there would not stay read-only)
// and the mounts of the host's system.
var filesRefused = []string{HomeDir, WorkspaceDir, "/usr", "/proc", "/dev", "/.pairbench"}

// checkFiles refuses a Policy.Files path that is not clean and absolute or
// that falls in a refused tree.
func checkFiles(files map[string]string) error {
	for path, content := range files {
		if !filepath.IsAbs(path) || filepath.Clean(path) != path || path == "/" {
			return fmt.Errorf("sandbox: file %q: want a clean absolute path", path)
		}
		for _, tree := range filesRefused {
			if path == tree || strings.HasPrefix(path, tree+"/") {
				return fmt.Errorf("sandbox: file %s: inside %s, where the sandbox's own files or the host's are", path, tree)
			}
		}
		if strings.ContainsRune(path+content, 0) {
			return fmt.Errorf("sandbox: file %s: a NUL byte in its path or contents", path)
		}
	}
	return nil
}

// policyFiles appends a sealed memory file per Policy.Files entry, named
// by its path inside (bwrapArgs copies each with --file, and the root is
// remounted read-only after).
func policyFiles(files []*os.File, policy map[string]string) ([]*os.File, error) {
	for _, path := range slices.Sorted(maps.Keys(policy)) {
		f, err := sealedFile(path, []byte(policy[path]))
		if err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}

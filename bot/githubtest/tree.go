package githubtest

import (
	"fmt"
	"io/fs"
)

// TreeFiles reads a working tree as the files of one commit, path →
// content, for Repo.Files: every regular file of fsys but those of a .git
// directory at its root.
func TreeFiles(fsys fs.FS) (map[string]string, error) {
	files := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p == ".git":
			return fs.SkipDir
		case !d.Type().IsRegular():
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the tree's files: %w", err)
	}
	return files, nil
}

package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGitChangedFilesSinceTheMergeBase: a pull request branch that edits a
// books tool, and a main that edited a weather tool after the branch was
// made. The changes a pull request shows are the branch's since its merge
// base with main, in a working tree (the Action's checkout, with an
// uncommitted and an untracked file) as in the git cache (the service's):
// main's own edit is not among them.
func TestGitChangedFilesSinceTheMergeBase(t *testing.T) {
	repo, git := gitRegistry(t)
	appendTo := func(name, line string) {
		f, err := os.OpenFile(filepath.Join(repo, "registry", name), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(line)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	git("checkout", "--quiet", "-b", "pr")
	appendTo("domains/books.example/tools/find_books.js", "// the pull request's edit\n")
	git("commit", "--quiet", "-am", "edit a books tool")
	head := git("rev-parse", "HEAD")
	git("checkout", "--quiet", "main")
	appendTo("domains/weather.example/tools/list_cities.js", "// edited on main since\n")
	git("commit", "--quiet", "-am", "edit a weather tool on main")
	base := git("rev-parse", "HEAD")
	git("checkout", "--quiet", "pr")

	ctx := context.Background()
	books := "domains/books.example/tools/find_books.js"
	since, err := GitChangedSince(ctx, filepath.Join(repo, ".git"), base, head, "registry")
	require.NoError(t, err)
	assert.Equal(t, []string{books}, since)

	reg := filepath.Join(repo, "registry")
	files, err := GitChangedFiles(ctx, reg, "main")
	require.NoError(t, err)
	assert.Equal(t, []string{books}, files, "the weather tool changed on main, not in the pull request")

	appendTo("bench/intents/books.example/books-cheapest-by-author.yaml", "# not committed\n")
	require.NoError(t, os.WriteFile(filepath.Join(reg, "domains", "books.example", "tools", "new.js"), []byte("// untracked\n"), 0o644))
	files, err = GitChangedFiles(ctx, reg, base)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{books, "bench/intents/books.example/books-cheapest-by-author.yaml", "domains/books.example/tools/new.js"}, files)

	// Histories that never met (a shallow clone that lacks the fork point)
	// are refused, saying so, rather than diffed two-dot.
	git("checkout", "--quiet", "--orphan", "lone")
	git("commit", "--quiet", "-m", "lone", "--allow-empty")
	_, err = GitChangedFiles(ctx, reg, base)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no common history")
}

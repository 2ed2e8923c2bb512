package bot_test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
)

// TestARegistryReadThatFailsIsNotAProblem: before an Actions dispatch the
// bot hands Config.CheckRegistry the pull request's head as a file tree
// read through the contents API. GitHub fails one read (a 502): what the
// check then says is not taken for the registry's problems; the job tries
// again, the check reads every file as the commit has it, and the bench is
// dispatched. A check that finds problems fails the bench undispatched.
func TestARegistryReadThatFailsIsNotAProblem(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		trees  []map[string]string
		broken atomic.Bool
	)
	check := func(tree fs.FS, commit string) error {
		files := map[string]string{}
		err := fs.WalkDir(tree, "domains", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(tree, p)
			files[p] = string(b)
			return err
		})
		mu.Lock()
		trees = append(trees, files)
		mu.Unlock()
		if err == nil && broken.Load() {
			err = errors.New("the registry at commit " + commit + " has 1 problem(s):\n  domains/books.example/domain.json:1: broken")
		}
		return err
	}
	f := newFixture(t, actions, func(c *bot.Config) { c.CheckRegistry = check })
	var faulted atomic.Bool
	f.gh.SetFaults(func(r *http.Request) githubtest.Fault {
		if strings.HasSuffix(r.URL.Path, "/contents/domains/books.example") && !faulted.Swap(true) {
			return githubtest.Fault{Status: http.StatusBadGateway, Message: "Server Error"}
		}
		return githubtest.Fault{}
	})
	f.opened(t, nil)
	require.Eventually(t, func() bool { return len(f.gh.Dispatches(repoName)) == 1 }, time.Minute, 10*time.Millisecond)
	f.settle(t)

	bn := f.benches(t)[0]
	assert.Equal(t, state.BenchRunning, bn.State, "a failed read is no problem of the registry's")
	mu.Lock()
	require.Len(t, trees, 2, "checked again after the failed read")
	want := map[string]string{}
	for p, content := range registryFiles {
		if strings.HasPrefix(p, "domains/") {
			want[p] = content
		}
	}
	assert.Equal(t, want, trees[1], "the tree is the commit's files")
	mu.Unlock()

	broken.Store(true)
	f.push(t, otherSHA, nil)
	require.Len(t, f.gh.Dispatches(repoName), 1, "a registry with problems takes no runner")
	bn = f.benches(t)[0]
	assert.Equal(t, state.BenchFailed, bn.State)
	assert.Contains(t, bn.Reason, "domains/books.example/domain.json:1: broken")
	comments := f.gh.Comments(repoName, prNumber)
	require.NotEmpty(t, comments)
	assert.Contains(t, comments[0].Body, "domains/books.example/domain.json:1: broken")
}

// TestARegistryTooLargeToReadIsDispatchedUnchecked: a registry whose check
// would take more than the bot's bound of contents API reads is dispatched
// at once, unchecked (the workflow's run checks it), whatever the check
// made of the part it read.
func TestARegistryTooLargeToReadIsDispatchedUnchecked(t *testing.T) {
	t.Parallel()
	var checks atomic.Int32
	f := newFixture(t, actions, func(c *bot.Config) {
		c.CheckRegistry = func(tree fs.FS, commit string) error {
			checks.Add(1)
			err := fs.WalkDir(tree, "domains", func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					_, err = fs.ReadFile(tree, p)
				}
				return err
			})
			return errors.Join(err, errors.New("a problem found in what was read"))
		}
	})
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		files := maps.Clone(registryFiles)
		for i := range 400 {
			files[fmt.Sprintf("domains/books.example/tools/t%03d.js", i)] = "({name: 'find_books'})"
		}
		r.Files[headSHA] = files
	})
	f.opened(t, nil)
	require.Len(t, f.gh.Dispatches(repoName), 1)
	assert.Equal(t, state.BenchRunning, f.benches(t)[0].State)
	assert.Equal(t, int32(1), checks.Load(), "not tried again: it would not fit the next time either")
}

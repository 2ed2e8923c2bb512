package bench_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
)

// TestRegistryCheckSurvivesAToolFileBomb checks a pull request's registry as
// pairbench serve does (bench.LoadGitRegistry over the commit's files) when
// a tool file is a memory bomb: one native call that once ended the whole
// service with a fatal out-of-memory error. The bomb is a file:line problem
// for the pull request, and this process goes on to check the next
// registry, with nothing of the bomb still running.
func TestRegistryCheckSurvivesAToolFileBomb(t *testing.T) {
	clean := fstest.MapFS{}
	example := os.DirFS("../examples/registry")
	require.NoError(t, fs.WalkDir(example, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := fs.ReadFile(example, name)
		clean[name] = &fstest.MapFile{Data: data}
		return err
	}))
	bombed := maps.Clone(clean)
	const bomb = "domains/books.example/tools/bomb.js"
	bombed[bomb] = &fstest.MapFile{Data: []byte("const big = \"x\".repeat(4e6);\nnew Array(1e6).join(big);\n({ name: \"bomb\", execute() {} })\n")}

	goroutines := runtime.NumGoroutine()
	start := time.Now()
	_, err := bench.LoadGitRegistry(bombed, ".", "0123456789ab", time.Now())
	var regErr *bench.RegistryError
	require.ErrorAs(t, err, &regErr)
	require.Len(t, regErr.Problems, 1, regErr.Error())
	p := regErr.Problems[0]
	assert.Equal(t, bomb, p.File)
	assert.Positive(t, p.Line, "a file:line problem the bot posts on the pull request")
	// The join grows its result by doubling until the evaluator's address
	// space is full; on a machine loaded many times over that may take
	// longer than the file's time limit and grace, which then end it.
	assert.Regexp(t, "MiB of memory its evaluation may|time limit", p.Msg)
	assert.Contains(t, err.Error(), bomb+":")
	t.Logf("the bomb's problem after %v: %s", time.Since(start), p)

	reg, err := bench.LoadGitRegistry(clean, ".", "0123456789ab", time.Now())
	require.NoError(t, err, "the next registry is checked as if nothing happened")
	assert.Len(t, reg.Domain("books.example").Tools, 3)

	// Nothing of the bomb runs on here: a goroutine still joining would
	// grow this process until the out-of-memory error ends it.
	for end := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "a goroutine of the bomb still runs in this process")
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	require.NoError(t, err)
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Empty(t, strings.TrimSpace(string(b)), "a tool-file evaluator still runs")
	}
}

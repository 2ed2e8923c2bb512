package intents

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bombs are tool files that once ended the process evaluating them (the
// first) or left a goroutine burning a core in it after it gave up (the
// others), and what they are now reported as (a regular expression: the
// recursion grows the stack until the time limit or the memory limit stops
// it, whichever comes first).
var bombs = []struct{ name, src, want string }{
	{"one native call asking for terabytes", setup(`new Array(1e6).join("x".repeat(4e6))`), "MiB of memory its evaluation may"},
	// The match gives up at the time limit (regexp2's match timeout), so
	// the interrupt stops the file rather than the grace's end or a kill.
	{"a backtracking regular expression", setup(`new RegExp("^(a+)+\\1?b$").test("a".repeat(44) + "c")`), "^tool file stopped: it ran past its time limit$"},
	{"native recursion", setup(`const o = {}; o.toString = () => String(o); String(o)`), "time limit|MiB of memory"},
}

// children lists the processes this process started that still exist.
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	require.NoError(t, err)
	var pids []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		pids = append(pids, strings.Fields(string(b))...)
	}
	return pids
}

// TestToolBombsEndWithTheirEvaluation evaluates each bomb: it is the file's
// problem, this process survives it, and nothing of it runs afterwards —
// no goroutine here, no process anywhere.
func TestToolBombsEndWithTheirEvaluation(t *testing.T) {
	lim := ToolLimits{Time: 200 * time.Millisecond, Grace: 3 * time.Second, Memory: 256 << 20}
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			start := time.Now()
			_, err := EvalTool(b.src, lim)
			elapsed := time.Since(start)
			var te *ToolError
			require.ErrorAs(t, err, &te)
			assert.Regexp(t, b.want, te.Msg)
			assert.Less(t, elapsed, lim.Time+lim.Grace+replySlack+evaluatorStart/3, "bounded by the file's limits and a start")
			// (assert.Eventually would count its own goroutine.)
			for end := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
			assert.LessOrEqual(t, runtime.NumGoroutine(), before, "a goroutine of the evaluation still runs here")
			assert.Empty(t, children(t), "an evaluator still runs")
		})
	}
}

// TestEvaluatorCPULimit: a file that keeps the CPU busy past its CPU time
// ends its evaluator, whatever its wall-clock limits.
func TestEvaluatorCPULimit(t *testing.T) {
	start := time.Now()
	_, err := EvalTool(setup(`for (;;) {}`), ToolLimits{Time: time.Minute, Grace: time.Minute, CPU: time.Second})
	var te *ToolError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, te.Msg, "more than its 1s of CPU time")
	assert.Less(t, time.Since(start), time.Minute)
	assert.Empty(t, children(t))
}

// TestLoadReportsABombAndGoesOn loads a registry whose tool files include
// the bombs between good ones: each bomb is a problem at its file, the good
// files on either side are read, and nothing keeps running.
func TestLoadReportsABombAndGoesOn(t *testing.T) {
	fsys := fstest.MapFS{}
	example := os.DirFS("../examples/registry")
	require.NoError(t, copyFS(fsys, example))
	tools := "domains/books.example/tools/"
	for i, b := range bombs {
		fsys[tools+"bomb"+string(rune('a'+i))+".js"] = &fstest.MapFile{Data: []byte(b.src)}
	}
	reg, err := LoadFS(fsys, "reg")
	var ps Problems
	require.ErrorAs(t, err, &ps)
	require.Len(t, ps, len(bombs), ps.Error())
	for i, b := range bombs {
		assert.Equal(t, filepath.Join("reg", tools, "bomb"+string(rune('a'+i))+".js"), ps[i].File)
		assert.Positive(t, ps[i].Line)
		assert.Regexp(t, b.want, ps[i].Msg)
	}
	assert.Len(t, reg.Domain("books.example").Tools, 3, "the good tool files beside the bombs are read")
	assert.Empty(t, children(t))
}

// copyFS copies every regular file of src into dst.
func copyFS(dst fstest.MapFS, src fs.FS) error {
	return fs.WalkDir(src, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := fs.ReadFile(src, name)
		dst[name] = &fstest.MapFile{Data: data}
		return err
	})
}

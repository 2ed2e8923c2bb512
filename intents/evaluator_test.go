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
// others), what EvalTool reports each as with the limits lim (a regular
// expression: the recursion grows the stack until the interrupt at the time
// limit or the memory limit stops it, whichever comes first), and what Load
// reports it as with loadLimits.
//
// What should end a bomb is given a short limit, and every other limit
// that would say otherwise is a hang guard far past it. The wall clock
// stretches with the machine's load, CPU time and memory do not: on CI's
// two cores at a load of 45 the terabyte join, evaluated with 200 ms of
// time and 3 s of grace, ran past its time limit in the tool's own code
// before it reached the join, and was reported so instead of by its
// memory.
var bombs = []struct {
	name, src, want string
	lim             ToolLimits
	wantLoad        string
}{
	// About 0.1 s of CPU reaches the memory limit; without that limit the
	// join grows until its second of CPU ends it (a GiB or two).
	{"one native call asking for terabytes", setup(`new Array(1e6).join("x".repeat(4e6))`), "MiB of memory its evaluation may",
		ToolLimits{Time: 2 * time.Minute, Grace: time.Minute, CPU: time.Second, Memory: 256 << 20}, "MiB of memory its evaluation may"},
	// The match gives up at the time limit (regexp2's match timeout), so
	// the interrupt stops the file rather than the grace's end or a kill.
	// With Load's two minutes the CPU time ends it.
	{"a backtracking regular expression", setup(`new RegExp("^(a+)+\\1?b$").test("a".repeat(44) + "c")`), "^tool file stopped: it ran past its time limit$",
		ToolLimits{Time: 200 * time.Millisecond, Grace: time.Minute, CPU: 5 * time.Second, Memory: 256 << 20}, "more than its 1s of CPU time"},
	// An interrupt in the middle of the recursion can take seconds of CPU
	// to unwind it, so the grace's end or the memory limit ends it, either
	// as good, whatever the load; without an interrupt the memory limit
	// ends it.
	{"native recursion", setup(`const o = {}; o.toString = () => String(o); String(o)`), "time limit|MiB of memory",
		ToolLimits{Time: 200 * time.Millisecond, Grace: 3 * time.Second, Memory: 256 << 20}, "MiB of memory"},
}

// loadLimits are the limits TestLoadReportsABombAndGoesOn evaluates every
// tool file with: what ends each bomb is its memory or its CPU time, the
// wall clock only a hang guard (Load's own 2 s and 2 s of grace raced the
// memory limit as the 3 s above did).
var loadLimits = ToolLimits{Time: 2 * time.Minute, Grace: time.Minute, CPU: time.Second, Memory: 256 << 20}

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
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			lim := b.lim
			before := runtime.NumGoroutine()
			start := time.Now()
			_, err := EvalTool(b.src, lim)
			elapsed := time.Since(start)
			var te *ToolError
			require.ErrorAs(t, err, &te)
			assert.Regexp(t, b.want, te.Msg)
			assert.Less(t, elapsed, lim.Time+lim.Grace+replySlack+evaluatorStart/3, "bounded by the file's limits and a start") // a hang guard
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
// files on either side are read, and nothing keeps running. The files are
// evaluated as Load evaluates them, with loadLimits.
func TestLoadReportsABombAndGoesOn(t *testing.T) {
	fsys := fstest.MapFS{}
	example := os.DirFS("../examples/registry")
	require.NoError(t, copyFS(fsys, example))
	tools := "domains/books.example/tools/"
	for i, b := range bombs {
		fsys[tools+"bomb"+string(rune('a'+i))+".js"] = &fstest.MapFile{Data: []byte(b.src)}
	}
	reg, err := loadFS(fsys, "reg",
		func(srcs []string, _ ToolLimits, ahead <-chan startedEvaluator) []evalResult {
			return evalTools(srcs, loadLimits, ahead)
		},
		func(ToolLimits) <-chan startedEvaluator { return startAhead(loadLimits) })
	var ps Problems
	require.ErrorAs(t, err, &ps)
	require.Len(t, ps, len(bombs), ps.Error())
	for i, b := range bombs {
		assert.Equal(t, filepath.Join("reg", tools, "bomb"+string(rune('a'+i))+".js"), ps[i].File)
		assert.Positive(t, ps[i].Line)
		assert.Regexp(t, b.wantLoad, ps[i].Msg)
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

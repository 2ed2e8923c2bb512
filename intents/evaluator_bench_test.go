package intents

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"
)

// evalToolsHere evaluates tool files one after another in this process, as
// Load did before evaluators: the baseline of BenchmarkLoadRegistry.
func evalToolsHere(srcs []string, lim ToolLimits, _ <-chan startedEvaluator) []evalResult {
	out := make([]evalResult, len(srcs))
	for i, src := range srcs {
		out[i].tool, out[i].err = evalToolHere(src, lim)
	}
	return out
}

// registryWithTools is the example registry with books.example's find_books
// copied under new names until the registry holds n tool files.
func registryWithTools(tb testing.TB, n int) fstest.MapFS {
	tb.Helper()
	fsys := fstest.MapFS{}
	if err := copyFS(fsys, os.DirFS("../examples/registry")); err != nil {
		tb.Fatal(err)
	}
	tools := "domains/books.example/tools"
	have, err := fs.Glob(fsys, "domains/*/tools/*.js")
	if err != nil {
		tb.Fatal(err)
	}
	src := string(fsys[path.Join(tools, "find_books.js")].Data)
	for i := range n - len(have) {
		name := fmt.Sprintf("find_books_%d", i)
		fsys[path.Join(tools, name+".js")] = &fstest.MapFile{Data: []byte(strings.Replace(src, `name: "find_books"`, `name: "`+name+`"`, 1))}
	}
	return fsys
}

// BenchmarkLoadRegistry loads the example registry (4 tool files) and one of
// 500 tool files, with the tool files evaluated in evaluator processes (as
// Load does) and, side by side, in this process (as Load did): the cost of
// the evaluators on validate. Run it as
//
//	go test ./intents -run '^$' -bench LoadRegistry -count 5
func BenchmarkLoadRegistry(b *testing.B) {
	for _, n := range []int{4, 500} {
		fsys := registryWithTools(b, n)
		for _, ev := range []struct {
			name  string
			eval  toolEvaluation
			ahead func(ToolLimits) <-chan startedEvaluator
		}{{"in-process", evalToolsHere, nil}, {"evaluators", evalTools, startAhead}} {
			b.Run(fmt.Sprintf("tools=%d/%s", n, ev.name), func(b *testing.B) {
				for b.Loop() {
					reg, err := loadFS(fsys, "reg", ev.eval, ev.ahead)
					if err != nil {
						b.Fatal(err)
					}
					if got := len(reg.Domain("books.example").Tools); got != n-1 {
						b.Fatalf("%d books tools, want %d", got, n-1)
					}
				}
			})
		}
	}
}

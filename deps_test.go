package pairbench_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// engine is what a package that reads runs must never reach, directly or
// through any package it imports: the engine and every adapter it drives
// (runner and the MCP server below it, the agents, the browsers, the
// scripted model), the sandbox, and the heavy modules behind them.
var engine = []string{
	module + "/runner",
	module + "/agent",
	module + "/browser",
	module + "/model",
	module + "/sandbox",
	"github.com/chromedp",
	"github.com/dop251/goja",
	"github.com/modelcontextprotocol/go-sdk",
}

// TestReadersNeverReachTheEngine holds the packages that read runs (the
// bot, the viewer, the report, the run directory, the example generator)
// to their whole dependency closure, as `go list -deps` gives it: reading a
// run must not link a browser driver, an agent, the sandbox, the MCP SDK or
// a JavaScript interpreter. A check of direct imports alone would miss a
// package of ours that pulls one in.
func TestReadersNeverReachTheEngine(t *testing.T) {
	for _, c := range []struct {
		pkg       string
		forbidden []string
	}{
		// The bot reads .pairbench.yml, intent ids and the domains a change
		// concerns through intents/config, which runs nothing of a
		// registry: never goja, as intents (tool files) would bring in.
		{pkg: "bot", forbidden: engine},
		{pkg: "viewer", forbidden: append(slices.Clone(engine), module+"/intents")},
		{pkg: "report", forbidden: append(slices.Clone(engine), module+"/intents", module+"/rundir")},
		{pkg: "stats", forbidden: append(slices.Clone(engine), module+"/intents", module+"/rundir", module+"/report")},
		{pkg: "rundir", forbidden: append(slices.Clone(engine), module+"/intents", module+"/grade", "github.com/santhosh-tekuri/jsonschema")},
		{pkg: "examples/runs/gen", forbidden: append(slices.Clone(engine), module+"/intents")},
	} {
		t.Run(c.pkg, func(t *testing.T) {
			deps := listDeps(t, path(c.pkg))
			for _, bad := range c.forbidden {
				reached := deps.reachable(path(c.pkg), "")
				var found [][]string // the chain to each package of bad reached
				for _, d := range deps.reaching(bad) {
					if reached[d] {
						found = append(found, deps.chain(path(c.pkg), d))
					}
				}
				if len(found) > 0 {
					shortest := slices.MinFunc(found, func(a, b []string) int { return len(a) - len(b) })
					t.Errorf("%s reaches %s (%d packages of it): %s", c.pkg, bad, len(found), strings.Join(shortest, " → "))
				}
			}
		})
	}
}

// TestSandboxInitReachesOnlyTheStandardLibrary: the sandbox's PID 1 starts
// every sandboxed command, so it links nothing beyond the standard library
// and golang.org/x/sys (and the init itself).
func TestSandboxInitReachesOnlyTheStandardLibrary(t *testing.T) {
	for _, pkg := range []string{"cmd/pairbench-sandbox-init", "internal/sandboxinit"} {
		deps := listDeps(t, path(pkg))
		for _, d := range deps.order {
			switch {
			case deps.pkgs[d].Standard, d == path(pkg), d == path("internal/sandboxinit"),
				d == "golang.org/x/sys" || strings.HasPrefix(d, "golang.org/x/sys/"):
			default:
				t.Errorf("%s reaches %s: %s", pkg, d, strings.Join(deps.chain(path(pkg), d), " → "))
			}
		}
	}
}

// TestDepsSeeThroughPackagesOfOurs proves the closure is whole: bench
// imports the runner directly, and reaches goja only through packages of
// ours (intents), which a check of direct imports would not see.
func TestDepsSeeThroughPackagesOfOurs(t *testing.T) {
	deps := listDeps(t, path("bench"))
	assert.NotEmpty(t, deps.reaching(module+"/runner"))
	assert.Contains(t, deps.reaching("github.com/dop251/goja"), "github.com/dop251/goja")
	assert.NotContains(t, deps.pkgs[path("bench")].Imports, "github.com/dop251/goja", "bench imports goja only through others")
	chain := deps.chain(path("bench"), "github.com/dop251/goja")
	assert.Greater(t, len(chain), 2, "goja is reached through a package of ours: %v", chain)
	assert.True(t, deps.reachable(path("bench"), "")["github.com/dop251/goja"])
	assert.False(t, deps.reachable(path("bench"), path("intents"))["github.com/dop251/goja"], "only intents brings goja in")
}

// depGraph is a package's dependency closure.
type depGraph struct {
	order []string // every package, dependencies first
	pkgs  map[string]depPackage
}

type depPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

// listDeps returns the closure of pkg as `go list -deps` gives it (the
// package's own build, not its tests').
func listDeps(t *testing.T, pkg string) *depGraph {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports", pkg).Output()
	require.NoError(t, err, "go list -deps %s", pkg)
	g := &depGraph{pkgs: map[string]depPackage{}}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p depPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		g.order = append(g.order, p.ImportPath)
		g.pkgs[p.ImportPath] = p
	}
	require.Contains(t, g.pkgs, pkg)
	return g
}

// reaching returns the packages of the closure that are prefix or below it.
func (g *depGraph) reaching(prefix string) []string {
	var out []string
	for _, p := range g.order {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	return out
}

// reachable returns the packages reachable from `from` without passing
// through avoid ("" avoids nothing).
func (g *depGraph) reachable(from, avoid string) map[string]bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g.pkgs[p].Imports {
			if !seen[imp] && imp != avoid {
				seen[imp] = true
				queue = append(queue, imp)
			}
		}
	}
	return seen
}

// chain returns the shortest import chain from `from` to `to`.
func (g *depGraph) chain(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var out []string
			for ; p != ""; p = prev[p] {
				out = append([]string{name(p)}, out...)
			}
			return out
		}
		for _, imp := range g.pkgs[p].Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return []string{name(from), "…", name(to)}
}

package pairbench_test

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayersDrawThePackages holds the drawing under "## Layers" in
// docs/architecture.md to the code, as `go list ./...` gives it: every
// package of ours is drawn, once; every name drawn is a package; a package
// drawn under another is imported by it; and a package imports only
// packages of ours drawn below it, on a later line (its own imports, not
// its tests', which may import any package). The import tables further down
// say which imports are allowed; the drawing, in what order the packages
// stand.
func TestLayersDrawThePackages(t *testing.T) {
	d := readLayers(t)
	for _, p := range d.problems(listPackages(t)) {
		t.Errorf("%s: %s", architectureDoc, p)
	}
}

// TestLayersAreReadWhole makes sure the drawing was found and read as a
// tree: a drawing that no longer parses must not pass by naming nothing.
func TestLayersAreReadWhole(t *testing.T) {
	d := readLayers(t)
	assert.Greater(t, len(d.at), 40)
	for child, parent := range map[string]string{
		"service":        "cmd/pairbench",
		"bench":          "cmd/pairbench",
		"runner/webmcp":  "runner",
		"stats":          "report",
		"browser/driver": "browser/local",
		"agent/codex":    "agent",
	} {
		l := d.at[path(child)]
		require.NotNil(t, l, "%s is drawn", child)
		require.NotNil(t, l.parent, "%s is drawn under %s", child, parent)
		assert.Contains(t, l.parent.names, path(parent), "%s is drawn under %s", child, parent)
	}
	page, err := os.ReadFile(architectureDoc)
	require.NoError(t, err)
	lines := strings.Split(string(page), "\n")
	for _, root := range []string{"pairbench", "cmd/pairbench", "cmd/verdictsim"} {
		l := d.at[path(root)]
		require.NotNil(t, l, "%s is drawn", root)
		assert.Nil(t, l.parent, "%s is drawn at the left margin", root)
		assert.True(t, strings.HasPrefix(lines[l.line-1], root+" "), "%s is drawn on line %d of the page: %q", root, l.line, lines[l.line-1])
	}
}

// TestLayersFindEveryDrift feeds the check drawings that disagree with
// their code in each way it knows, so that each can fail.
func TestLayersFindEveryDrift(t *testing.T) {
	pkgs := []goPackage{
		{Path: path("cmd/pairbench"), Imports: []string{path("bench"), path("pairbench"), "fmt"}},
		{Path: path("bench"), Imports: []string{path("stats"), path("pairbench")}},
		{Path: path("stats")},
		{Path: module},
	}
	const good = "" +
		"cmd/pairbench        the binary\n" +
		"   │\n" +
		"   └── bench         a bench\n" +
		"         └── stats   the math, with a description\n" +
		"                     on two lines\n" +
		"\n" +
		"pairbench            the vocabulary\n"
	d, err := parseLayers(good, 1)
	require.NoError(t, err)
	require.Empty(t, d.problems(pkgs), "the good drawing")

	for _, c := range []struct {
		name, drawing, want string
	}{
		{"a package left out", strings.Replace(good, "         └── stats   the math, with a description\n", "", 1), "stats is not drawn"},
		{"a name that is no package", good + "viewer               pages\n", "viewer is drawn but is no package"},
		{"a package drawn twice", good + "stats                again\n", "stats is drawn twice"},
		{"an import drawn above its importer", "pairbench  the vocabulary\n" + strings.Replace(good, "pairbench            the vocabulary\n", "", 1), "bench (line 4) imports pairbench, which is drawn above it (line 1)"},
		{"an import beside its importer", strings.Replace(good, "   └── bench ", "   └── bench, pairbench ", 1), "bench (line 3) imports pairbench, which is drawn beside it"},
		{"a package under one that does not import it", strings.Replace(good, "pairbench            the vocabulary\n", "               └── pairbench  the vocabulary\n", 1), "pairbench is drawn under stats, which does not import it"},
		{"an ancestor imported", strings.Replace(strings.Replace(good, "cmd/pairbench        the binary\n", "bench                a bench\n", 1), "   └── bench         a bench\n", "   └── cmd/pairbench  the binary\n", 1), "cmd/pairbench (line 3) imports bench, which is drawn above it (line 1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := parseLayers(c.drawing, 1)
			require.NoError(t, err)
			problems := d.problems(pkgs)
			assert.True(t, slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }),
				"want a problem saying %q; got %q", c.want, problems)
		})
	}

	_, err = parseLayers("cmd/pairbench  the binary\n└── bench      under nothing\n", 1)
	assert.Error(t, err, "a branch needs a package above it to hang from")
}

// layer is one line of the drawing: the packages it names and the line
// they are drawn under (nil at the left margin).
type layer struct {
	line   int // of the page
	names  []string
	parent *layer
}

// layers is the drawing, read.
type layers struct {
	lines []*layer
	at    map[string]*layer // by import path; a package drawn twice keeps its first
	twice []string
}

// readLayers reads the first code block under "## Layers".
func readLayers(t *testing.T) *layers {
	t.Helper()
	f, err := os.Open(architectureDoc)
	require.NoError(t, err)
	defer f.Close()
	var block strings.Builder
	var section, inBlock, done bool
	first := 0 // the line of the page the drawing starts on
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan() && !done; n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Layers"
		case section && strings.HasPrefix(line, "```") && inBlock:
			done = true
		case section && strings.HasPrefix(line, "```"):
			inBlock, first = true, n+1
		case inBlock:
			block.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	require.True(t, done, "%s has a drawing under ## Layers", architectureDoc)
	d, err := parseLayers(block.String(), first)
	require.NoError(t, err, "%s's drawing under ## Layers", architectureDoc)
	return d
}

// parseLayers reads a drawing whose first line is line first of its page.
// A line at the left margin names a package drawn under nothing; a branch
// (├── or └──) names one drawn under the nearest line above whose branch
// starts further left. The names are the line's text up to two spaces (a
// description follows), separated by commas: `pairbench` for the module
// root, the others by their path in the module. A line with no branch that
// does not start at the margin goes on the description above; one of only
// │ and spaces joins branches.
func parseLayers(drawing string, first int) (*layers, error) {
	d := &layers{at: map[string]*layer{}}
	type open struct {
		col int
		l   *layer
	}
	var stack []open
	for i, text := range strings.Split(drawing, "\n") {
		n := first + i
		runes := []rune(text)
		if strings.Trim(text, " │") == "" {
			continue
		}
		col := slices.IndexFunc(runes, func(r rune) bool { return r != ' ' && r != '│' })
		branch := strings.HasPrefix(string(runes[col:]), "├──") || strings.HasPrefix(string(runes[col:]), "└──")
		if !branch && col > 0 {
			continue // a description's next line
		}
		for len(stack) > 0 && stack[len(stack)-1].col >= col {
			stack = stack[:len(stack)-1]
		}
		l := &layer{line: n}
		if branch {
			if len(stack) == 0 {
				return nil, fmt.Errorf("line %d: a branch under nothing: %s", n, text)
			}
			l.parent = stack[len(stack)-1].l
		}
		rest := strings.TrimLeft(strings.TrimLeft(string(runes[col:]), "├└─"), " ")
		if end := strings.Index(rest, "  "); end >= 0 {
			rest = rest[:end]
		}
		for _, field := range strings.Split(rest, ",") {
			p := path(strings.TrimSpace(field))
			l.names = append(l.names, p)
			if _, ok := d.at[p]; ok {
				d.twice = append(d.twice, p)
				continue
			}
			d.at[p] = l
		}
		d.lines = append(d.lines, l)
		stack = append(stack, open{col: col, l: l})
	}
	return d, nil
}

// problems returns how the drawing and the packages disagree, each in a
// sentence.
func (d *layers) problems(pkgs []goPackage) []string {
	var out []string
	byPath := map[string]goPackage{}
	for _, p := range pkgs {
		byPath[p.Path] = p
		if d.at[p.Path] == nil {
			out = append(out, fmt.Sprintf("%s is not drawn", name(p.Path)))
		}
	}
	for _, p := range d.twice {
		out = append(out, fmt.Sprintf("%s is drawn twice", name(p)))
	}
	for _, l := range d.lines {
		for _, n := range l.names {
			p, ok := byPath[n]
			if !ok {
				out = append(out, fmt.Sprintf("%s is drawn but is no package", name(n)))
				continue
			}
			if l.parent != nil {
				for _, up := range l.parent.names {
					if q, ok := byPath[up]; ok && !slices.Contains(q.Imports, n) {
						out = append(out, fmt.Sprintf("%s is drawn under %s, which does not import it", name(n), name(up)))
					}
				}
			}
			for _, imp := range p.Imports {
				switch at := d.at[imp]; {
				case !isOurs(imp), at == nil:
				case at.line < l.line:
					out = append(out, fmt.Sprintf("%s (line %d) imports %s, which is drawn above it (line %d)", name(n), l.line, name(imp), at.line))
				case at == l:
					out = append(out, fmt.Sprintf("%s (line %d) imports %s, which is drawn beside it", name(n), l.line, name(imp)))
				}
			}
		}
	}
	return out
}

package pairbench_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/pairbench/pairbench"

// architectureDoc is the page whose tables say who may import whom.
const architectureDoc = "docs/architecture.md"

// TestImportsFollowTheArchitecture holds every import of every package to
// the two tables of docs/architecture.md, default-deny: a package of ours
// that has no row, an import of ours its row does not allow, a third-party
// module without an owner, or a package importing a module its row does not
// name, fails until the page says so. Tests may import any package of ours
// (they wire real components) and the modules their package may, plus
// those the module table gives to tests.
func TestImportsFollowTheArchitecture(t *testing.T) {
	arch := readArchitecture(t)
	pkgs := listPackages(t)

	listed := map[string]bool{}
	for _, p := range pkgs {
		listed[p.Path] = true
		allowed, ok := arch.packages[p.Path]
		if !assert.True(t, ok, "package %s has no row in %s", name(p.Path), architectureDoc) {
			continue
		}
		for _, imp := range p.Imports {
			switch {
			case isStd(imp):
			case isOurs(imp):
				assert.True(t, allowed[imp], "%s imports %s, which its row in %s does not allow", name(p.Path), name(imp), architectureDoc)
			default:
				assert.NoError(t, arch.mayUse(p.Path, imp, false), "%s", name(p.Path))
			}
		}
		for _, imp := range append(slices.Clone(p.TestImports), p.XTestImports...) {
			if !isStd(imp) && !isOurs(imp) && !slices.Contains(p.Imports, imp) {
				assert.NoError(t, arch.mayUse(p.Path, imp, true), "tests of %s", name(p.Path))
			}
		}
	}
	for path := range arch.packages {
		assert.True(t, listed[path], "%s has a row for %s, which is no package", architectureDoc, name(path))
	}
	for path, imps := range arch.packages {
		for imp := range imps {
			assert.True(t, listed[imp], "%s lets %s import %s, which is no package", architectureDoc, name(path), name(imp))
		}
	}
}

// TestArchitectureDocIsReadWhole makes sure the tables were found: a page
// whose tables no longer parse must not pass by allowing nothing to check.
func TestArchitectureDocIsReadWhole(t *testing.T) {
	arch := readArchitecture(t)
	assert.Greater(t, len(arch.packages), 10)
	assert.Greater(t, len(arch.modules), 10)
	require.NotNil(t, arch.packages[module+"/server"])
	require.NoError(t, arch.mayUse(module+"/server", "github.com/gin-gonic/gin", false))
	assert.Error(t, arch.mayUse(module+"/bot", "github.com/gin-gonic/gin", false), "only server imports gin")
	assert.Error(t, arch.mayUse(module+"/bot", "example.com/unowned", false), "a module without an owner")
	assert.NoError(t, arch.mayUse(module+"/grade", "github.com/stretchr/testify/assert", true))
	assert.Error(t, arch.mayUse(module+"/grade", "github.com/stretchr/testify/assert", false), "testify is for tests")
	assert.NoError(t, arch.mayUse(module+"/browser/driver", "github.com/modelcontextprotocol/go-sdk/mcp", true))
	assert.Error(t, arch.mayUse(module+"/browser/driver", "github.com/modelcontextprotocol/go-sdk/mcp", false))
}

// architecture is what docs/architecture.md allows.
type architecture struct {
	// packages maps each package of ours to the packages of ours it may
	// import.
	packages map[string]map[string]bool
	// modules maps each third-party module to who may import it.
	modules map[string]users
}

// users are the importers of a module.
type users struct {
	pkgs      map[string]bool // packages, with their tests
	tests     map[string]bool // only these packages' tests
	allTests  bool            // every package's tests
	rowOfPage string
}

// mayUse returns why pkg (or, with test, its tests) may not import imp, or
// nil.
func (a *architecture) mayUse(pkg, imp string, test bool) error {
	mod, u := "", users{}
	for m, mu := range a.modules {
		if (imp == m || strings.HasPrefix(imp, m+"/")) && len(m) > len(mod) {
			mod, u = m, mu
		}
	}
	switch {
	case mod == "":
		return fmt.Errorf("imports %s, whose module has no owner in %s", imp, architectureDoc)
	case u.pkgs[pkg], test && (u.allTests || u.tests[pkg]):
		return nil
	}
	return fmt.Errorf("imports %s, but %s gives %s to others only (%s)", imp, architectureDoc, mod, u.rowOfPage)
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readArchitecture parses the two tables under "## Who imports whom".
func readArchitecture(t *testing.T) *architecture {
	t.Helper()
	f, err := os.Open(architectureDoc)
	require.NoError(t, err)
	defer f.Close()
	a := &architecture{packages: map[string]map[string]bool{}, modules: map[string]users{}}
	var section bool
	var table string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Who imports whom"
			continue
		case !section || !strings.HasPrefix(line, "|"):
			table = ""
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.Len(t, cells, 3, "a row of three cells in %s: %s", architectureDoc, line)
		head := strings.TrimSpace(cells[0])
		if head == "package" || head == "module" {
			table = head
			continue
		}
		switch table {
		case "package":
			names := backticked.FindAllStringSubmatch(cells[0], -1)
			require.Len(t, names, 1, "one package per row: %s", line)
			may := map[string]bool{}
			for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
				may[path(m[1])] = true
			}
			a.packages[path(names[0][1])] = may
		case "module":
			u := users{pkgs: map[string]bool{}, tests: map[string]bool{}, rowOfPage: strings.TrimSpace(line)}
			for _, part := range strings.Split(cells[2], ",") {
				part = strings.TrimSpace(part)
				m := backticked.FindStringSubmatch(part)
				switch {
				case part == "every package's tests":
					u.allTests = true
				case m != nil && strings.HasPrefix(part, "tests of "):
					u.tests[path(m[1])] = true
				case m != nil:
					u.pkgs[path(m[1])] = true
				default:
					t.Fatalf("%s: cannot read %q in: %s", architectureDoc, part, line)
				}
			}
			for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
				a.modules[m[1]] = u
			}
		}
	}
	require.NoError(t, sc.Err())
	return a
}

// path turns a package's name on the page into its import path.
func path(n string) string {
	if n == "pairbench" {
		return module
	}
	return module + "/" + n
}

// name turns an import path of ours into its name on the page.
func name(p string) string {
	if p == module {
		return "pairbench"
	}
	return strings.TrimPrefix(p, module+"/")
}

func isOurs(p string) bool { return p == module || strings.HasPrefix(p, module+"/") }

// isStd reports whether p is in the standard library: its first element
// has no dot.
func isStd(p string) bool { return !strings.Contains(strings.Split(p, "/")[0], ".") }

type goPackage struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
	Path                               string `json:"-"`
}

// listPackages lists every package of the module but the Node tools'
// (tools/ holds no Go of ours).
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []goPackage
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		if strings.HasPrefix(p.ImportPath, module+"/tools/") {
			continue
		}
		p.Path = p.ImportPath
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

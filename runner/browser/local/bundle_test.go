package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/intents"
)

func TestExpressionTrimsTrailingSemicolons(t *testing.T) {
	for src, want := range map[string]string{
		"({a: 1})":             "({a: 1})",
		"  ({a: 1});\n":        "({a: 1})",
		"({a: 1}) ; ;\n\t;  ":  "({a: 1})",
		"({a: 1}) // note\n":   "({a: 1}) // note",
		"/* head */ ({a: 1});": "/* head */ ({a: 1})",
	} {
		assert.Equal(t, want, expression(src), "expression(%q)", src)
	}
}

func TestBundleRejectsToolsItCannotGuard(t *testing.T) {
	_, err := bundle("m", []intents.Tool{{Name: "anywhere", Source: "({})"}})
	assert.ErrorContains(t, err, "tool anywhere has no URL patterns")
	_, err = bundle("m", []intents.Tool{{Name: "empty", URLPatterns: []string{"http://a.test/*"}, Source: " \n"}})
	assert.ErrorContains(t, err, "tool empty has no source")

	scripts, err := bundle("m", []intents.Tool{{Name: "t", URLPatterns: []string{"http://a.test/*"}, Source: "({name: 't'});"}})
	require.NoError(t, err)
	require.Len(t, scripts, 2, "the registry, then one script per tool")
	assert.Contains(t, scripts[0], "initializeWebMCPPolyfill", "the registry script carries the polyfill")
	assert.True(t, strings.HasSuffix(scripts[1], `("m", ["http://a.test/*"], () => (`+"\n({name: 't'})\n));"), scripts[1])
}

// TestVendoredPolyfillMatchesPinnedVersion checks the vendored file is the
// one the project's pinned tools install.
func TestVendoredPolyfillMatchesPinnedVersion(t *testing.T) {
	pkg := filepath.Join("..", "..", "..", "tools", "node_modules", "@mcp-b", "webmcp-polyfill")
	pinned, err := os.ReadFile(filepath.Join(pkg, "dist", "index.iife.js"))
	if os.IsNotExist(err) {
		t.Fatal("tools/node_modules is not installed (scripts/setup.sh installs it)")
	}
	require.NoError(t, err)
	assert.Equal(t, string(pinned), polyfillJS, "polyfill/webmcp-polyfill.iife.js differs from the pinned package")
	manifest, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	require.NoError(t, err)
	assert.Contains(t, string(manifest), `"version": "5.1.0"`, "polyfill/README.md names 5.1.0")
	license, err := os.ReadFile(filepath.Join("polyfill", "LICENSE"))
	require.NoError(t, err)
	assert.Contains(t, string(license), "MIT License")
}

package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/realstack"
)

func TestBundleRejectsToolsItCannotGuard(t *testing.T) {
	tool, err := intents.EvalTool("const a = 1;\n({ name: 't', execute() {} });", intents.ToolLimits{})
	require.NoError(t, err)

	anywhere := tool
	_, _, err = bundle("m", []intents.Tool{anywhere}, true)
	assert.ErrorContains(t, err, "tool t has no URL patterns")
	_, _, err = bundle("m", []intents.Tool{{Name: "raw", URLPatterns: []string{"http://a.test/*"}, Source: "({})"}}, true)
	assert.ErrorContains(t, err, "tool raw has no page form")

	tool.URLPatterns, tool.Path = []string{"http://a.test/*"}, "domains/a.test/tools/t one.js"
	_, _, err = bundle("m", []intents.Tool{tool, tool}, true)
	assert.ErrorContains(t, err, "tool t is given twice")

	registry, scripts, err := bundle("m", []intents.Tool{tool}, true)
	require.NoError(t, err)
	assert.Contains(t, registry, "initializeWebMCPPolyfill", "the registry script carries the polyfill")
	assert.Contains(t, registry, `"file":"domains/a.test/tools/t one.js"`, "the registry expects every tool file")
	require.Len(t, scripts, 1)
	s := scripts[0].script
	assert.True(t, strings.HasPrefix(s, "{ const make = (pairbench$tool) => {const a = 1;\n"),
		"the file's first line is the script's first line: %s", s)
	assert.True(t, strings.HasSuffix(s, "//# sourceURL=pairbench-tool:domains/a.test/tools/t%20one.js\n"), s)
	assert.NotContains(t, s, "eval(")
	assert.NotContains(t, s, "new Function")
}

// TestVendoredPolyfillMatchesPinnedVersion checks the vendored file is the
// one the project's pinned tools install.
func TestVendoredPolyfillMatchesPinnedVersion(t *testing.T) {
	realstack.Need(t, realstack.NodeTools)
	pkg := filepath.Join(realstack.NodeModules(t), "@mcp-b", "webmcp-polyfill")
	pinned, err := os.ReadFile(filepath.Join(pkg, "dist", "index.iife.js"))
	require.NoError(t, err)
	assert.Equal(t, string(pinned), polyfillJS, "polyfill/webmcp-polyfill.iife.js differs from the pinned package")
	manifest, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	require.NoError(t, err)
	assert.Contains(t, string(manifest), `"version": "5.1.0"`, "polyfill/README.md names 5.1.0")
	license, err := os.ReadFile(filepath.Join("polyfill", "LICENSE"))
	require.NoError(t, err)
	assert.Contains(t, string(license), "MIT License")
}

package pairbench_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportRules enforces ARCHITECTURE.md: each heavy dependency is imported
// by exactly one package of ours, so the rest of the code never needs it.
func TestImportRules(t *testing.T) {
	owners := map[string]string{
		"github.com/gin-gonic/gin":                "github.com/pairbench/pairbench/server",
		"github.com/google/go-github/v66/github":  "github.com/pairbench/pairbench/bot",
		"github.com/aws/aws-sdk-go-v2/service/s3": "github.com/pairbench/pairbench/artifacts",
		"github.com/chromedp/chromedp":            "github.com/pairbench/pairbench/runner/browser/local",
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			owner, ok := owners[imp]
			if ok {
				assert.Equal(t, owner, pkg, "%s imports %s, which only %s may import", pkg, imp, owner)
			}
		}
	}
}

// TestLayerRules enforces who may import whom among our own packages.
func TestLayerRules(t *testing.T) {
	const mod = "github.com/pairbench/pairbench"
	allowed := map[string][]string{
		"":          {},
		"intents":   {""},
		"internal":  {},
		"grade":     {"", "intents"},
		"stats":     {""},
		"sandbox":   {"internal/heldir"},
		"artifacts": {},
		"server":    {},
		"state":     {},
		"bot":       {"", "stats", "artifacts", "intents", "state"},
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], mod), "/")
		rules, ok := allowed[topLevel(pkg)]
		if !ok || strings.HasSuffix(pkg, "test") {
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
			if topLevel(dep) == topLevel(pkg) {
				continue
			}
			assert.Contains(t, rules, dep, "package %q may not import %q", pkg, dep)
		}
	}
}

func topLevel(pkg string) string {
	top, _, _ := strings.Cut(pkg, "/")
	return top
}

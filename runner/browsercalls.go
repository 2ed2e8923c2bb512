package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pairbench/pairbench"
)

// CheckBrowserCalls records, in row, the invocations the browser's own WebMCP
// reported and checks them against what the agent's side logged. Where the
// page's WebMCP is the browser's own and the browser reports invocations,
// every call the agent's side logged as answered by the page must have
// reached the browser: the returned message names each tool that fell short
// (a harness error); "" when they agree or the browser cannot tell.
func CheckBrowserCalls(b Browser, setup *Setup, row *pairbench.Row) string {
	if setup.WebMCP != pairbench.WebMCPNative {
		return ""
	}
	calls, ok := b.BrowserCalls()
	if !ok {
		return ""
	}
	row.BrowserWebMCP = calls
	seen := map[string]int{}
	for _, c := range calls {
		seen[c.Tool]++
	}
	answered := map[string]int{}
	for _, inv := range row.WebMCP {
		if inv.Status == "ok" {
			answered[inv.Tool]++
		}
	}
	var short []string
	for _, tool := range slices.Sorted(maps.Keys(answered)) {
		if seen[tool] < answered[tool] {
			short = append(short, fmt.Sprintf("%s (the agent's side logged %d answered, the browser saw %d)", tool, answered[tool], seen[tool]))
		}
	}
	if len(short) == 0 {
		return ""
	}
	return "harness error: tool calls the browser's WebMCP did not see: " + strings.Join(short, ", ")
}

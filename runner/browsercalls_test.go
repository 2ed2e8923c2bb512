package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
)

// recordingBrowser is a Browser whose own WebMCP reported calls.
type recordingBrowser struct {
	Browser
	calls    []pairbench.BrowserCall
	reported bool
}

func (b recordingBrowser) BrowserCalls() ([]pairbench.BrowserCall, bool) { return b.calls, b.reported }

func TestCheckBrowserCallsFindsCallsTheBrowserDidNotSee(t *testing.T) {
	agentSide := []pairbench.Invocation{
		{Tool: "find_books", Status: "ok"}, {Tool: "find_books", Status: "ok"},
		{Tool: "no_such_tool", Status: "error", Error: "not live"}, // never reached the page
	}
	native := &Setup{WebMCP: pairbench.WebMCPNative}
	seenOnce := recordingBrowser{calls: []pairbench.BrowserCall{{Tool: "find_books", Status: "Completed"}}, reported: true}

	row := pairbench.Row{WebMCP: agentSide}
	assert.Equal(t, "harness error: tool calls the browser's WebMCP did not see: find_books (the agent's side logged 2 answered, the browser saw 1)",
		CheckBrowserCalls(seenOnce, native, &row))
	assert.Equal(t, seenOnce.calls, row.BrowserWebMCP)

	seenTwice := seenOnce
	seenTwice.calls = append(seenTwice.calls, pairbench.BrowserCall{Tool: "find_books", Status: "Completed"}, pairbench.BrowserCall{Tool: "shop_hours"})
	assert.Empty(t, CheckBrowserCalls(seenTwice, native, &pairbench.Row{WebMCP: agentSide}), "the page may call its own tools too")

	for name, c := range map[string]struct {
		b     Browser
		setup *Setup
	}{
		"polyfill":  {seenOnce, &Setup{WebMCP: pairbench.WebMCPPolyfill}},
		"no domain": {recordingBrowser{}, native},
	} {
		row := pairbench.Row{WebMCP: agentSide}
		assert.Empty(t, CheckBrowserCalls(c.b, c.setup, &row), name)
		assert.Nil(t, row.BrowserWebMCP, name)
	}
}

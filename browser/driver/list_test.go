package driver

import (
	"context"
	"strings"
	"testing"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListSeesARegistrationInFlight: WebMCP's registerTool settles a
// macrotask after the tool is live, so a listing can run in between (a
// loaded renderer may answer DevTools first). The listing must still count
// the tool as pairbench's: were it taken for the page's own, the treatment
// setup would fail with "entry tool ... is not live (registered tools
// live: none)". Here a tool file is added and the page listed in the same
// task, the narrowest window there is.
func TestListSeesARegistrationInFlight(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(context.Background(), testsite.Patience)
	defer cancel()
	require.NoError(t, b.RegisterTools(ctx, testsite.BookTools(t)))
	_, err := b.Load(ctx, "http://books.test/")
	require.NoError(t, err)
	tab, err := b.current(ctx)
	require.NoError(t, err)

	mark := jsonString(b.mark)
	expr := `(() => {
  window[` + mark + `].add(
    {name: "late_tool", file: "late.js", patterns: ["http://books.test/*"], sourceURL: "pairbench-tool:///late.js",
     expect: {name: "late_tool", title: "", description: "registered last", readOnlyHint: false}},
    () => ({name: "late_tool", description: "registered last", execute() { return 1; }}));
  return (
` + listJS + `
  )(` + mark + `, ` + strings.TrimSpace(matchJS) + `);
})()`
	var text string
	require.NoError(t, b.eval(ctx, tab, expr, &text))
	assert.Contains(t, text, `"name":"late_tool"`, "the tool is live")
	assert.Contains(t, text, `"name":"late_tool","title":"","description":"registered last","readOnlyHint":false,"registered":true`,
		"and listed as registered: %s", text)
}

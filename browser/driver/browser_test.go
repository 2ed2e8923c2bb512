package driver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner/webmcp"
)

func toolNames(tools []webmcp.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

func TestTreatmentRegistersToolsMatchingTheURL(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(context.Background(), testsite.Patience)
	defer cancel()

	require.NoError(t, b.RegisterTools(ctx, testsite.BookTools(t)))
	info, err := b.Load(ctx, "http://books.test/")
	require.NoError(t, err)
	assert.Equal(t, "http://books.test/", info.URL)
	assert.Equal(t, 1, info.Navigations)
	assert.False(t, info.LoadedAt.IsZero())

	live, err := b.LiveTools(ctx)
	require.NoError(t, err)
	// weather_now's pattern does not match books.test, so it is not there.
	assert.Equal(t, []string{"explode", "find_books", "out_of_stock"}, toolNames(live))
	for _, tool := range live {
		assert.True(t, tool.Registered, "%s registered", tool.Name)
		assert.True(t, tool.ReadOnly, "%s readOnlyHint", tool.Name)
	}
	assert.Equal(t, "Find books", live[1].Title)
	assert.JSONEq(t, `{"type":"object","properties":{"author":{"type":"string"}},"required":["author"]}`, string(live[1].InputSchema))

	res, err := b.InvokeTool(ctx, "find_books", json.RawMessage(`{"author":"Ada"}`))
	require.NoError(t, err)
	assert.Empty(t, res.Exception)
	assert.True(t, res.Registered)
	assert.JSONEq(t, `[{"title":"Notes","author":"Ada","price":12}]`, res.Text)

	res, err = b.InvokeTool(ctx, "explode", nil)
	require.NoError(t, err)
	assert.Contains(t, res.Exception, "kaboom")
	assert.Empty(t, res.Text)

	res, err = b.InvokeTool(ctx, "weather_now", nil)
	require.NoError(t, err)
	assert.Contains(t, res.Exception, `no tool named "weather_now"`)
	assert.False(t, res.Registered)

	// The same browser, on the weather site, has only the weather tool.
	_, err = b.Load(ctx, "http://weather.test/")
	require.NoError(t, err)
	live, err = b.LiveTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"weather_now"}, toolNames(live))
}

func TestStartPageScriptsSeeTheToolsFirst(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	require.NoError(t, b.RegisterTools(ctx, testsite.BookTools(t)))
	_, err := b.Load(ctx, "http://books.test/probe")
	require.NoError(t, err)
	var probe string
	require.NoError(t, b.eval(ctx, b.start, "window.probe", &probe))
	assert.Equal(t, "explode,find_books,out_of_stock", probe)
}

func TestRegisterToolsOnlyOnce(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	require.NoError(t, b.RegisterTools(t.Context(), testsite.BookTools(t)))
	assert.Error(t, b.RegisterTools(t.Context(), testsite.BookTools(t)))
}

// TestSameDocumentURLChangesFollowThePatterns moves within one document, as a
// single-page site does, and checks the tools follow the URL.
func TestSameDocumentURLChangesFollowThePatterns(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	tools := []intents.Tool{
		testsite.Tool(t, "find_books", "http://books.test/*"),
		testsite.Tool(t, "weather_now", "http://books.test/shelf/*"),
	}
	require.NoError(t, b.RegisterTools(ctx, tools))
	_, err := b.Load(ctx, "http://books.test/")
	require.NoError(t, err)

	liveAfter := func(js string) []string {
		t.Helper()
		var ignored any
		require.NoError(t, b.eval(ctx, b.start, js+"; null", &ignored))
		live, err := b.LiveTools(ctx)
		require.NoError(t, err)
		return toolNames(live)
	}
	assert.Equal(t, []string{"find_books"}, liveAfter("void 0"))
	assert.Equal(t, []string{"find_books", "weather_now"}, liveAfter(`history.pushState({}, "", "/shelf/3")`))
	res, err := b.InvokeTool(ctx, "weather_now", nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"temp":21}`, res.Text)
	assert.True(t, res.Registered)
	assert.Equal(t, []string{"find_books"}, liveAfter(`history.pushState({}, "", "/counter")`))
	// history.back() traverses asynchronously.
	liveAfter(`history.back()`)
	assert.Eventually(t, func() bool {
		live, err := b.LiveTools(ctx)
		return err == nil && assert.ObjectsAreEqual([]string{"find_books", "weather_now"}, toolNames(live))
	}, testsite.Patience, 20*time.Millisecond, "back on /shelf/3")
}

package driver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/realstack"
)

// liarPage changes its form after load, as an agent's typing would, then
// tries to fake what is read of it: it redefines querySelector and the
// innerText getter in its own world.
const liarPage = `<!doctype html><title>Gift</title>
<h1>Poetry   picks</h1>
<input id="genre" value="fiction">
<ul><li id="pick">Paper Boats, $7.49</li></ul>
<p>` + "long" + `</p>
<script>
document.getElementById("genre").value = "poetry";
const real = Document.prototype.querySelector;
Document.prototype.querySelector = function () { return real.call(this, "title"); };
Object.defineProperty(HTMLElement.prototype, "innerText", {get() { return "faked"; }});
</script>`

// TestPageStateReadsWhatThePageShows: the final page's state is read as
// the page is (the value typed after load, the text as shown), whatever
// the page's scripts redefine, with each selector's first match; a
// selector that matches nothing, or that the browser cannot parse, says so.
func TestPageStateReadsWhatThePageShows(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	mux := http.NewServeMux()
	mux.HandleFunc("books.test/gift", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Replace(liarPage, "long", strings.Repeat("verse ", 5000), 1))
	})
	site := testsite.Serve(t, mux)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(context.Background(), testsite.Patience)
	defer cancel()
	_, err := b.Load(ctx, "http://books.test/gift")
	require.NoError(t, err)

	st, err := b.PageState(ctx, []string{"h1", "#genre", "#pick", ".absent", "li[", "ul"})
	require.NoError(t, err)
	assert.Equal(t, "http://books.test/gift", st.URL)
	assert.Equal(t, "Gift", st.Title)
	assert.True(t, strings.HasPrefix(st.Text, "Poetry picks"), "the page's text, white space collapsed: %.60q", st.Text)
	assert.LessOrEqual(t, len(st.Text), pairbench.MaxPageText, "the text is cut")
	require.Len(t, st.Elements, 6)
	assert.Equal(t, pairbench.PageElement{Selector: "h1", Found: true, Text: "Poetry picks"}, st.Elements[0])
	assert.Equal(t, pairbench.PageElement{Selector: "#genre", Found: true, Value: "poetry", HasValue: true}, st.Elements[1],
		"the value the page holds now, not its attribute")
	assert.Equal(t, pairbench.PageElement{Selector: "#pick", Found: true, Text: "Paper Boats, $7.49"}, st.Elements[2])
	assert.Equal(t, pairbench.PageElement{Selector: ".absent"}, st.Elements[3])
	assert.False(t, st.Elements[4].Found)
	assert.Contains(t, st.Elements[4].Error, "not a valid selector")
	assert.Equal(t, "Paper Boats, $7.49", st.Elements[5].Text)
}

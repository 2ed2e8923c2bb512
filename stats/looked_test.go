package stats

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToppedUpRunSaysItsLook: the report of a run topped up with more
// pairs says, in the Markdown and the HTML, which look it decides and at
// what level, and report.json carries it; a run of one look says nothing.
func TestToppedUpRunSaysItsLook(t *testing.T) {
	r := fixtureReport()
	r.Alpha = 0.05 - Spent(0.05, 7.0/9)
	r.Looks = &Looked{Pairs: []int{7, 9}, Look: 2, RunAlpha: 0.05}
	want := "Look 2 of 2 (7, then 9 pairs per intent): the run was topped up, so this look is decided at α 0.0237, the share of the run's α 0.05 the O'Brien–Fleming design leaves it after the earlier looks (docs/statistics.md, Looks)."

	md := Markdown(r, MarkdownOptions{})
	assert.Contains(t, md, "> [!NOTE]\n> "+mdText(want))
	var html bytes.Buffer
	require.NoError(t, WriteHTML(&html, r, HTMLOptions{}))
	assert.Contains(t, html.String(), "<p>Look 2 of 2 (7, then 9 pairs per intent): the run was topped up, so this look is decided at α 0.0237")

	var js bytes.Buffer
	require.NoError(t, WriteJSON(&js, r))
	back, err := ReadJSON(&js)
	require.NoError(t, err)
	assert.Equal(t, r.Looks, back.Looks, "report.json carries it")

	r.Looks = nil
	assert.NotContains(t, Markdown(r, MarkdownOptions{}), "Look ")
	html.Reset()
	require.NoError(t, WriteHTML(&html, r, HTMLOptions{}))
	assert.NotContains(t, html.String(), "topped up")
}

package report

import (
	"bytes"
	"html/template"
	"testing"

	"github.com/pairbench/pairbench/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToppedUpRunSaysItsLook: the report of a run topped up with more
// pairs says, in the Markdown and the HTML, which look it decides and at
// what level, and report.json carries it; a run of one look says nothing.
func TestToppedUpRunSaysItsLook(t *testing.T) {
	r := fixtureReport()
	r.Alpha = 0.05 - stats.Spent(0.05, 7.0/9)
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

// TestStoppedRunSaysWhereAndWhy: the report of a run that stopped at a
// look says which, why, at what level and how many pairs it did not run,
// in the Markdown and the HTML, and report.json carries the stop.
func TestStoppedRunSaysWhereAndWhy(t *testing.T) {
	for _, c := range []struct {
		looked Looked
		want   string
	}{
		{Looked{Pairs: []int{4, 8, 12}, Look: 1, RunAlpha: 0.05, Stop: StopEfficacy, Reason: "the verdict faster was reached at level 0.000687"},
			"Look 1 of 3 (4, then 8, then 12 pairs per intent): the run, every intent with it, stopped here for efficacy: the verdict faster was reached at level 0.000687; this look is decided at α 0.000687, its share of the run's α 0.05 under the O'Brien–Fleming design (docs/statistics.md, Looks); the 8 further pairs per intent the design planned were not run."},
		{Looked{Pairs: []int{4, 8, 12}, Look: 2, RunAlpha: 0.05, Stop: StopFutility, Reason: "the pooled speed p 0.6 and accuracy p 1 are both above 0.2"},
			"Look 2 of 3 (4, then 8, then 12 pairs per intent): the run, every intent with it, stopped here for futility: the pooled speed p 0.6 and accuracy p 1 are both above 0.2 (non-binding: a resume with more pairs may go on); this look is decided at α 0.0157, its share of the run's α 0.05 under the O'Brien–Fleming design (docs/statistics.md, Looks); the 4 further pairs per intent the design planned were not run."},
		{Looked{Pairs: []int{2, 4, 6}, Look: 1, RunAlpha: 0.05, Stop: StopFutility, Blind: true, Reason: "no claim can be reached at a later look"},
			"Look 1 of 3 (2, then 4, then 6 pairs per intent): the run, every intent with it, stopped here for futility: no claim can be reached at a later look (non-binding: a resume with more pairs may go on); this look spends none of the run's α 0.05 and could stop the run only for futility: it is decided at α 0.000687, which no outcome of its pairs reaches (docs/statistics.md, Looks); the 4 further pairs per intent the design planned were not run."},
		{Looked{Pairs: []int{4, 8, 12}, Look: 3, RunAlpha: 0.05, Stop: StopComplete, Reason: "every planned pair is done"},
			"Look 3 of 3 (4, then 8, then 12 pairs per intent): the run went on through its looks, claiming no difference before this one (a run topped up with more pairs included); this look is decided at α 0.0336, its share of the run's α 0.05 under the O'Brien–Fleming design (docs/statistics.md, Looks)."},
	} {
		r := fixtureReport()
		r.Looks = &c.looked
		d := stats.Design{Looks: []float64{1.0 / 3, 2.0 / 3, 1}}
		r.Alpha = d.LookAlpha(0.05, c.looked.Look-1)
		assert.Contains(t, Markdown(r, MarkdownOptions{}), "> [!NOTE]\n> "+mdText(c.want))
		var html bytes.Buffer
		require.NoError(t, WriteHTML(&html, r, HTMLOptions{}))
		assert.Contains(t, html.String(), "<p>"+template.HTMLEscapeString(c.want)+"</p>")
		var js bytes.Buffer
		require.NoError(t, WriteJSON(&js, r))
		back, err := ReadJSON(&js)
		require.NoError(t, err)
		assert.Equal(t, r.Looks, back.Looks)
	}
}

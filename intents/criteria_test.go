package intents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// judgedIntent is an open-ended intent on the example bookshop: its
// criteria and checks start on the lines the tests below name.
const judgedIntent = `id: books-poetry-gift
domain: books.example
start_url: http://books.example/
prompt: Suggest a poetry book under $10 as a gift and say why.
entry_tool: list_genre
answer:
  type: object
  properties:
    title: {type: string}
    why: {type: string}
  required: [title, why]
class: judged
pass_at: 0.6
criteria:
  - id: cheap
    weight: 2
    description: The book costs under $10.
  - id: reasoned
    weight: 1
    description: The answer says why it suits a gift.
checks:
  - selector: "h1"
    text: Poetry
  - selector: "#genre"
    value: poetry
baseline:
  tool_args: {genre: poetry}
  steps:
    - tool: browser_navigate
      args: {url: "http://books.example/genre/poetry"}
  answer: {title: Paper Boats, why: short and cheap}
`

func writeJudged(t *testing.T, text string) (dir, file string) {
	t.Helper()
	dir = copyRegistry(t)
	file = filepath.Join(dir, "bench/intents/books.example/books-poetry-gift.yaml")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	return dir, file
}

func TestLoadJudgedIntent(t *testing.T) {
	dir, file := writeJudged(t, judgedIntent)
	reg, err := Load(dir)
	require.NoError(t, err)
	in := reg.Intent("books-poetry-gift")
	require.NotNil(t, in)
	assert.True(t, in.Judged())
	assert.Equal(t, pairbench.AnswerJudged, in.Class)
	require.NotNil(t, in.PassAt)
	assert.Equal(t, 0.6, *in.PassAt)
	require.Len(t, in.Criteria, 2)
	assert.Equal(t, Criterion{Pos: Pos{File: file, Line: 15}, ID: "cheap", Weight: 2, Description: "The book costs under $10."}, in.Criteria[0])
	assert.Equal(t, "reasoned", in.Criteria[1].ID)
	require.Len(t, in.Checks, 2)
	assert.Equal(t, Check{Pos: Pos{File: file, Line: 22}, Selector: "h1", Text: "Poetry"}, in.Checks[0])
	require.NotNil(t, in.Checks[1].Value)
	assert.Equal(t, "poetry", *in.Checks[1].Value)
	assert.Equal(t, `#genre has value "poetry"`, in.Checks[1].String())
	assert.Equal(t, `h1 has text "Poetry"`, in.Checks[0].String())
	assert.False(t, reg.Intent("books-cheapest-by-author").Judged())
}

// TestJudgedIntentProblems: each mistake in the judged fields is a problem
// at the line it is written on.
func TestJudgedIntentProblems(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		want           []string // "line: message"
	}{
		{"no criteria", "criteria:\n  - id: cheap\n    weight: 2\n    description: The book costs under $10.\n  - id: reasoned\n    weight: 1\n    description: The answer says why it suits a gift.\n", "",
			[]string{`12: class "judged" needs criteria (what the judge scores the answer on)`}},
		{"no pass_at", "pass_at: 0.6\n", "",
			[]string{`12: class "judged" needs pass_at (the weighted score from which a trial is correct, 0 to 1)`}},
		{"pass_at above 1", "pass_at: 0.6", "pass_at: 1.5",
			[]string{`13: pass_at 1.5: want a score above 0 and at most 1`}},
		{"pass_at zero", "pass_at: 0.6", "pass_at: 0",
			[]string{`13: pass_at 0: want a score above 0 and at most 1`}},
		{"criteria on a pinned intent", "class: judged\npass_at: 0.6\n", "class: pinned\n",
			[]string{`13: criteria are scored only for class "judged" (this intent is "pinned")`}},
		{"pass_at on a pinned intent", "class: judged\npass_at: 0.6\ncriteria:\n  - id: cheap\n    weight: 2\n    description: The book costs under $10.\n  - id: reasoned\n    weight: 1\n    description: The answer says why it suits a gift.\n", "class: pinned\npass_at: 0.6\n",
			[]string{`13: pass_at applies only to class "judged" (this intent is "pinned")`}},
		{"duplicate id", "id: reasoned", "id: cheap",
			[]string{`18: criteria[1]: id "cheap" is already a criterion of this intent`}},
		{"bad id", "id: reasoned", "id: Reasoned Well",
			[]string{`18: criteria[1]: id "Reasoned Well": use lower-case letters, digits, '_' or '-' (at most 40)`}},
		{"no id", "  - id: reasoned\n    weight: 1", "  - weight: 1",
			[]string{`18: criteria[1]: missing id`}},
		{"zero weight", "weight: 1", "weight: 0",
			[]string{`19: criteria[1]: weight 0: want a positive number (its share of the score)`}},
		{"negative weight", "weight: 2", "weight: -2",
			[]string{`16: criteria[0]: weight -2: want a positive number (its share of the score)`}},
		{"weight not a number", "weight: 2", "weight: lots",
			[]string{`16: criteria[0].weight: want a number, got "lots"`}},
		{"no description", "description: The answer says why it suits a gift.", "description: \"  \"",
			[]string{`20: criteria[1]: missing description (what the judge reads)`}},
		{"unknown criterion field", "weight: 1\n", "weight: 1\n    points: 3\n",
			[]string{`20: unknown field "points" in criteria[1]`}},
		{"check without selector", "  - selector: \"h1\"\n    text: Poetry", "  - text: Poetry",
			[]string{`22: checks[0]: missing selector (a CSS selector of the final page)`}},
		{"check with text and value", "value: poetry", "value: poetry\n    text: Poetry",
			[]string{`24: checks[1]: give text or value, not both`}},
		{"unknown check field", "text: Poetry", "text: Poetry\n    count: 2",
			[]string{`24: unknown field "count" in checks[0]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, judgedIntent, tc.old)
			_, file := writeJudged(t, strings.Replace(judgedIntent, tc.old, tc.new, 1))
			_, err := Load(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file)))))
			var ps Problems
			require.True(t, errors.As(err, &ps), "%v", err)
			var got []string
			for _, p := range ps {
				if p.File == file {
					got = append(got, strings.TrimPrefix(p.String(), file+":"))
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestChecksOnAnyIntent: hard checks are not only for judged intents.
func TestChecksOnAnyIntent(t *testing.T) {
	dir := copyRegistry(t)
	edit(t, dir, "bench/intents/books.example/books-cheapest-by-author.yaml", "class: pinned\n", "class: pinned\nchecks:\n  - selector: main\n")
	reg, err := Load(dir)
	require.NoError(t, err)
	in := reg.Intent("books-cheapest-by-author")
	require.Len(t, in.Checks, 1)
	assert.Equal(t, "main exists", in.Checks[0].String())
}

// TestChecksTakeFixtures: a check's selector, text and value may name
// fixtures, substituted when the run is planned; an unknown one is a
// problem at the check's line.
func TestChecksTakeFixtures(t *testing.T) {
	text := strings.Replace(judgedIntent, "  - selector: \"#genre\"\n    value: poetry", "  - selector: \"#{{field}}\"\n    value: \"{{genre}}\"", 1)
	text = strings.Replace(text, "baseline:", "fixtures:\n  field: genre\n  genre: poetry\nbaseline:", 1)
	dir, _ := writeJudged(t, text)
	reg, err := Load(dir)
	require.NoError(t, err)
	in, err := Resolve(*reg.Intent("books-poetry-gift"), time.Now())
	require.NoError(t, err)
	assert.Equal(t, `#genre has value "poetry"`, in.Checks[1].String())
	assert.Equal(t, `#{{field}} has value "{{genre}}"`, reg.Intent("books-poetry-gift").Checks[1].String(), "the registry keeps its text")

	_, file := writeJudged(t, strings.Replace(judgedIntent, "text: Poetry", "text: \"{{nope}}\"", 1))
	_, err = Load(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file)))))
	require.Error(t, err)
	assert.Contains(t, err.Error(), file+":22: checks[0]: {{nope}} names no fixture")
}

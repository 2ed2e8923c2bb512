package grade

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

func TestCheckPage(t *testing.T) {
	str := func(s string) *string { return &s }
	at := intents.Pos{File: "i.yaml", Line: 7}
	for _, tc := range []struct {
		name  string
		check intents.Check
		el    pairbench.PageElement
		want  string
	}{
		{"exists", intents.Check{Selector: "main"}, pairbench.PageElement{Selector: "main", Found: true}, ""},
		{"missing", intents.Check{Selector: "main"}, pairbench.PageElement{Selector: "main"},
			"page check main exists (i.yaml:7) failed: nothing matches main"},
		{"text, white space and case aside", intents.Check{Selector: "h1", Text: "books  BY ada"}, pairbench.PageElement{Selector: "h1", Found: true, Text: "Books by Ada Quill"}, ""},
		{"other text", intents.Check{Selector: "h1", Text: "poetry"}, pairbench.PageElement{Selector: "h1", Found: true, Text: "Books"},
			`page check h1 has text "poetry" (i.yaml:7) failed: its text is "Books"`},
		{"value", intents.Check{Selector: "#q", Value: str("Ada")}, pairbench.PageElement{Selector: "#q", Found: true, Value: " Ada ", HasValue: true}, ""},
		{"value is exact", intents.Check{Selector: "#q", Value: str("Ada")}, pairbench.PageElement{Selector: "#q", Found: true, Value: "ada", HasValue: true},
			`page check #q has value "Ada" (i.yaml:7) failed: its value is "ada"`},
		{"empty value", intents.Check{Selector: "#q", Value: str("")}, pairbench.PageElement{Selector: "#q", Found: true, HasValue: true}, ""},
		{"no value", intents.Check{Selector: "h1", Value: str("")}, pairbench.PageElement{Selector: "h1", Found: true, Text: "x"},
			`page check h1 has value "" (i.yaml:7) failed: the element has no value`},
		{"bad selector", intents.Check{Selector: "li["}, pairbench.PageElement{Selector: "li[", Error: "'li[' is not a valid selector"},
			`page check li[ exists (i.yaml:7) failed: the browser cannot use the selector: 'li[' is not a valid selector`},
		{"not read", intents.Check{Selector: "h1"}, pairbench.PageElement{Selector: "h2", Found: true},
			`page check h1 exists (i.yaml:7) failed: the page was not read for it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check.Pos = at
			checks := []intents.Check{tc.check}
			assert.Equal(t, []string{tc.check.Selector}, Selectors(checks))
			page := pairbench.PageState{Elements: []pairbench.PageElement{tc.el}}
			assert.Equal(t, tc.want, CheckPage(checks, page))
			g := GradePage(checks, page, Result{Outcome: pairbench.Correct, Extracted: map[string]any{"a": 1.0}})
			if tc.want == "" {
				assert.Equal(t, pairbench.Correct, g.Outcome)
			} else {
				assert.Equal(t, Result{Outcome: pairbench.Wrong, Reason: tc.want, Extracted: map[string]any{"a": 1.0}}, g)
			}
		})
	}
	assert.Equal(t, "page check b exists () failed: the page was not read for it",
		CheckPage([]intents.Check{{Selector: "a"}, {Selector: "b"}}, pairbench.PageState{Elements: []pairbench.PageElement{{Selector: "a", Found: true}}}),
		"a check the page was not read for fails")
}

package grade

import (
	"fmt"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

// Selectors are the selectors whose first matches a trial reads from its
// final page for the checks, in the checks' order (PageState.Elements then
// line up with checks).
func Selectors(checks []intents.Check) []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.Selector
	}
	return out
}

// CheckPage tests checks against the final page, read with Selectors(checks).
// It returns "" when every check passes, else why the first one failed, at
// the check's position in its intent file.
func CheckPage(checks []intents.Check, page pairbench.PageState) string {
	for i, c := range checks {
		var el pairbench.PageElement
		if i < len(page.Elements) {
			el = page.Elements[i]
		}
		why := ""
		switch {
		case el.Selector != c.Selector:
			why = "the page was not read for it"
		case el.Error != "":
			why = "the browser cannot use the selector: " + el.Error
		case !el.Found:
			why = "nothing matches " + c.Selector
		case c.Value != nil && !el.HasValue:
			why = "the element has no value"
		case c.Value != nil && strings.TrimSpace(el.Value) != strings.TrimSpace(*c.Value):
			why = fmt.Sprintf("its value is %q", el.Value)
		case c.Text != "" && !strings.Contains(foldSpace(el.Text), foldSpace(c.Text)):
			why = fmt.Sprintf("its text is %q", clip(el.Text, 200))
		}
		if why != "" {
			return fmt.Sprintf("page check %s (%s) failed: %s", c, c.Pos, why)
		}
	}
	return ""
}

// GradePage returns the grade of a trial whose final page was read: g as it
// was when every check passes, else Wrong for the first check that failed,
// whatever the answer (the judge is not asked).
func GradePage(checks []intents.Check, page pairbench.PageState, g Result) Result {
	if why := CheckPage(checks, page); why != "" {
		return Result{Outcome: pairbench.Wrong, Reason: why, Extracted: g.Extracted}
	}
	return g
}

// foldSpace collapses white space and case, as text checks compare.
func foldSpace(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

package intents

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pairbench/pairbench"
)

// Criterion is one thing a judge scores an open-ended answer on (an intent
// of class judged), from 0 to 1. The trial's score is the weighted mean of
// its criteria's scores.
type Criterion struct {
	Pos `json:"-" yaml:"-"`

	// ID names the criterion in rows and reports ("cheapest", "tradeoffs").
	ID string `json:"id" yaml:"id"`
	// Weight is the criterion's share of the score, relative to the
	// others' (any positive number).
	Weight float64 `json:"weight" yaml:"weight"`
	// Description is what the judge reads: what a full score needs.
	Description string `json:"description" yaml:"description"`
}

// Check is a hard check on the page the agent left: the first element
// Selector matches must exist and, when Text or Value is given, show it.
// pairbench evaluates checks in the trial's browser after the agent ends; a
// failed check grades the trial wrong, before its answer is graded or
// judged.
type Check struct {
	Pos `json:"-" yaml:"-"`

	// Selector is a CSS selector, matched against the current page's
	// document.
	Selector string `json:"selector" yaml:"selector"`
	// Text, when set, must appear in the element's text (white space
	// collapsed, case aside).
	Text string `json:"text,omitempty" yaml:"text"`
	// Value, when set, must be the element's value (a form control's, white
	// space trimmed) exactly.
	Value *string `json:"value,omitempty" yaml:"value"`
}

// String names the check in a reason: `#cart .count has text "2"`.
func (c Check) String() string {
	switch {
	case c.Value != nil:
		return fmt.Sprintf("%s has value %q", c.Selector, *c.Value)
	case c.Text != "":
		return fmt.Sprintf("%s has text %q", c.Selector, c.Text)
	}
	return c.Selector + " exists"
}

// Judged reports whether the intent's answers are scored by a judge
// against its criteria.
func (in *Intent) Judged() bool { return in.Class == pairbench.AnswerJudged }

// criterionID matches a criterion's id.
var criterionID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// maxCriteria and maxChecks bound what one intent declares: each criterion
// is a line of every judge prompt, each check a query of the final page.
const (
	maxCriteria = 20
	maxChecks   = 20
)

// criteria checks the judged fields: a judged intent has criteria and a
// pass_at threshold, another class has neither; each criterion has a
// well-formed unique id, a positive weight and a description; each check a
// selector.
func (c intentCheck) criteria() {
	in := c.in
	judged := in.Judged()
	switch {
	case judged && len(in.Criteria) == 0:
		c.add("class", "class %q needs criteria (what the judge scores the answer on)", pairbench.AnswerJudged)
	case !judged && len(in.Criteria) > 0:
		c.add("criteria", "criteria are scored only for class %q (this intent is %q)", pairbench.AnswerJudged, in.Class)
	case len(in.Criteria) > maxCriteria:
		c.add("criteria", "%d criteria: at most %d", len(in.Criteria), maxCriteria)
	}
	switch {
	case judged && in.PassAt == nil:
		c.add("class", "class %q needs pass_at (the weighted score from which a trial is correct, 0 to 1)", pairbench.AnswerJudged)
	case !judged && in.PassAt != nil:
		c.add("pass_at", "pass_at applies only to class %q (this intent is %q)", pairbench.AnswerJudged, in.Class)
	case in.PassAt != nil && (*in.PassAt <= 0 || *in.PassAt > 1):
		c.add("pass_at", "pass_at %s: want a score above 0 and at most 1", numberString(*in.PassAt))
	}
	seen := map[string]bool{}
	for i, cr := range in.Criteria {
		path := fmt.Sprintf("criteria[%d]", i)
		switch {
		case cr.ID == "":
			c.l.ps.Add(cr.Pos, "%s: missing id", path)
		case !criterionID.MatchString(cr.ID):
			c.add(path+".id", "%s: id %q: use lower-case letters, digits, '_' or '-' (at most 40)", path, cr.ID)
		case seen[cr.ID]:
			c.add(path+".id", "%s: id %q is already a criterion of this intent", path, cr.ID)
		}
		seen[cr.ID] = true
		if cr.Weight <= 0 && !c.reported(path+".weight") {
			c.add(path+".weight", "%s: weight %s: want a positive number (its share of the score)", path, numberString(cr.Weight))
		}
		if strings.TrimSpace(cr.Description) == "" {
			c.add(path+".description", "%s: missing description (what the judge reads)", path)
		}
	}
	if len(in.Checks) > maxChecks {
		c.add("checks", "%d checks: at most %d", len(in.Checks), maxChecks)
	}
	for i, ch := range in.Checks {
		path := fmt.Sprintf("checks[%d]", i)
		if strings.TrimSpace(ch.Selector) == "" {
			c.l.ps.Add(ch.Pos, "%s: missing selector (a CSS selector of the final page)", path)
		}
		if ch.Text != "" && ch.Value != nil {
			c.l.ps.Add(ch.Pos, "%s: give text or value, not both", path)
		}
	}
}

// reported reports whether a problem is already known at the line of the
// field at path (a value the decoder could not read).
func (c intentCheck) reported(path string) bool {
	at := c.li.dec.At(c.li.dec.Line(path))
	for _, p := range c.l.ps {
		if p.Pos == at {
			return true
		}
	}
	return false
}

// checks returns cs with fixtures substituted in their selectors, texts
// and values.
func (r *resolver) checks(cs []Check) []Check {
	if cs == nil {
		return nil
	}
	out := make([]Check, len(cs))
	for i, c := range cs {
		c.Selector, c.Text = r.str(c.Selector), r.str(c.Text)
		if c.Value != nil {
			v := r.str(*c.Value)
			c.Value = &v
		}
		out[i] = c
	}
	return out
}

// checkPlaceholders checks that every {{name}} in a check names a fixture,
// at the check's line.
func (c intentCheck) checkPlaceholders() {
	for i, ch := range c.in.Checks {
		texts := []string{ch.Selector, ch.Text}
		if ch.Value != nil {
			texts = append(texts, *ch.Value)
		}
		for _, s := range texts {
			names, bad := placeholders(s)
			for _, b := range bad {
				c.l.ps.Add(ch.Pos, "checks[%d]: malformed placeholder %s (want {{name}})", i, b)
			}
			for _, n := range names {
				if _, ok := c.in.Fixtures[n]; !ok {
					c.l.ps.Add(ch.Pos, "checks[%d]: {{%s}} names no fixture", i, n)
				}
			}
		}
	}
}

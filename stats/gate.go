package stats

import (
	"fmt"
	"strings"

	"github.com/pairbench/pairbench"
)

// A gate lets a team block a merge on labels: a final report fails the gate
// when its verdict or a benched intent's label is one the gate names
// (placebo intents test the harness and never fail it).

// ParseGate reads a comma-separated list of labels ("less accurate,slower").
func ParseGate(s string) ([]pairbench.Label, error) {
	var out []pairbench.Label
	for _, f := range strings.Split(s, ",") {
		l := pairbench.Label(strings.TrimSpace(f))
		if l == "" {
			continue
		}
		if l.Rank() < 0 {
			return nil, fmt.Errorf("--fail-on: %q is not a label (want some of: %s)", l, labelList())
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--fail-on: name at least one label (%s)", labelList())
	}
	return out, nil
}

func labelList() string {
	s := make([]string, len(pairbench.Labels))
	for i, l := range pairbench.Labels {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}

// Gate returns what in r fails a gate on labels: "verdict: less accurate"
// and "intent books-x: less accurate" for each benched intent whose label
// is among them; nil when nothing does. A report that is not final (pairs
// still to run) has no verdict to gate on and fails nothing.
func (r *Report) Gate(labels []pairbench.Label) []string {
	if !r.Final() || len(labels) == 0 {
		return nil
	}
	in := func(l pairbench.Label) bool {
		for _, x := range labels {
			if x == l {
				return true
			}
		}
		return false
	}
	var out []string
	if in(r.Verdict) {
		out = append(out, "verdict: "+string(r.Verdict))
	}
	for _, it := range r.Intents {
		if !it.Placebo && in(it.Label) {
			out = append(out, fmt.Sprintf("intent %s: %s", it.ID, it.Label))
		}
	}
	return out
}

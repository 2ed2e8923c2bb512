package report

import (
	"fmt"
	"strings"

	"github.com/pairbench/pairbench"
)

// A gate lets a team block a merge on labels: a final report fails the gate
// when its verdict or a benched intent's label is one the gate names, or,
// when it names GateWorse, when head is worse than base (the run's or an
// intent's non-inferiority result). Placebo intents test the harness and
// never fail it.

// GateWorse is what a gate names to fail on the non-inferiority result
// "worse" (head against base), beside the labels.
const GateWorse = pairbench.Label(Worse)

// ParseGate reads a comma-separated list of labels ("less accurate,slower"),
// GateWorse among them. Errors name no flag: the caller says where the
// list came from.
func ParseGate(s string) ([]pairbench.Label, error) {
	var out []pairbench.Label
	for _, f := range strings.Split(s, ",") {
		l := pairbench.Label(strings.TrimSpace(f))
		if l == "" {
			continue
		}
		if l.Rank() < 0 && l != GateWorse {
			return nil, fmt.Errorf("%q is not a label (want some of: %s)", l, labelList())
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("name at least one label (%s)", labelList())
	}
	return out, nil
}

func labelList() string {
	s := make([]string, len(pairbench.Labels), len(pairbench.Labels)+1)
	for i, l := range pairbench.Labels {
		s[i] = string(l)
	}
	return strings.Join(append(s, string(GateWorse)), ", ")
}

// Gate returns what in r fails a gate on labels: "verdict: less accurate"
// and "intent books-x: less accurate" for each benched intent whose label
// is among them, and with GateWorse "head against base: worse" and
// "intent books-x: worse than base"; nil when nothing does. A report that is not final (pairs
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
	worse := in(GateWorse)
	if worse && r.NonInferiority == Worse {
		out = append(out, "head against base: worse")
	}
	for _, it := range r.Intents {
		if it.Placebo {
			continue
		}
		if in(it.Label) {
			out = append(out, fmt.Sprintf("intent %s: %s", it.ID, it.Label))
		}
		if worse && it.NonInferiority != nil && it.NonInferiority.Result == Worse {
			out = append(out, fmt.Sprintf("intent %s: worse than base", it.ID))
		}
	}
	return out
}

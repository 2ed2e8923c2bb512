package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench"
)

// isSignal reports whether l claims a difference between the arms.
func isSignal(l pairbench.Label) bool {
	switch l {
	case pairbench.Faster, pairbench.Slower, pairbench.MoreAccurate, pairbench.LessAccurate,
		pairbench.Better, pairbench.Mixed:
		return true
	}
	return false
}

// decide gives an intent its label and the reason, from its adjusted p
// values, attainable p values, pair accounting, agreement check and its
// domain's adoption stage. The rules are tried in this order:
//
//  1. no adoption: no analysed treatment trial invoked a registered tool
//     (with no complete pairs: the domain's adoption stage had trials and
//     none adopted);
//  2. inconclusive: more than a fifth of the pairs were lost to aborts, or
//     neither family could reach an adjusted p ≤ α with these pairs;
//  3. by significance: better (both in treatment's favour), mixed (opposite
//     directions), less accurate (both against treatment), faster/slower
//     (speed alone), more/less accurate (accuracy alone), else no signal;
//  4. a failed agreement check turns faster, slower or better into mixed.
func decide(in *Intent, stage *DomainAdoption, alpha float64) (pairbench.Label, string) {
	n := in.Pairs.Complete
	if n > 0 && in.Treatment.Adoption != nil && in.Treatment.Adoption.X == 0 {
		return pairbench.NoAdoption, fmt.Sprintf("treatment invoked no registered tool in %d complete pairs", n)
	}
	if n == 0 && stage != nil && stage.Trials > 0 && stage.Adopted == 0 {
		return pairbench.NoAdoption, fmt.Sprintf("no registered tool was invoked in %d adoption-stage trials of %s", stage.Trials, stage.Domain)
	}
	total := max(in.Pairs.Planned, in.Pairs.Seen)
	if lost := in.Pairs.LostToAborts; lost > 0 && 5*lost > total {
		return pairbench.Inconclusive, fmt.Sprintf("%d of %d pairs were lost to aborts (more than a fifth)", lost, total)
	}
	if in.MinP.Speed > alpha && in.MinP.Accuracy > alpha {
		return pairbench.Inconclusive, fmt.Sprintf(
			"significance was out of reach: with %d untied both-correct and %d discordant pairs the smallest attainable adjusted p values are %.3g (speed) and %.3g (accuracy), above α = %g",
			untied(in.Speed), in.Accuracy.Discordant, in.MinP.Speed, in.MinP.Accuracy, alpha)
	}
	sigS := in.Speed != nil && in.Speed.Faster+in.Speed.Slower > 0 && in.Speed.PAdj <= alpha
	sigA := in.Accuracy.Discordant > 0 && in.Accuracy.PAdj <= alpha
	faster := in.Speed != nil && in.Speed.Faster > in.Speed.Slower
	better := in.Table.TreatmentOnly > in.Table.ControlOnly
	var label pairbench.Label
	var why string
	switch {
	case sigS && sigA && faster && better:
		label, why = pairbench.Better, "treatment was significantly faster and more accurate"
	case sigS && sigA && faster != better:
		label, why = pairbench.Mixed, "speed and accuracy were significant in opposite directions"
	case sigS && sigA:
		label, why = pairbench.LessAccurate, "treatment was significantly less accurate (and slower)"
	case sigS && faster:
		label, why = pairbench.Faster, "treatment was significantly faster; accuracy showed no significant difference"
	case sigS:
		label, why = pairbench.Slower, "treatment was significantly slower; accuracy showed no significant difference"
	case sigA && better:
		label, why = pairbench.MoreAccurate, "treatment was significantly more accurate; speed showed no significant difference"
	case sigA:
		label, why = pairbench.LessAccurate, "treatment was significantly less accurate; speed showed no significant difference"
	default:
		return pairbench.NoSignal, "significance was attainable but neither speed nor accuracy differed significantly"
	}
	if sigS && label != pairbench.Mixed && label != pairbench.LessAccurate && in.Check != nil && in.Check.Failed {
		return pairbench.Mixed, fmt.Sprintf("%s, but the %s agreement check failed", why, in.Check.Kind)
	}
	return label, why
}

func untied(s *Speed) int {
	if s == nil {
		return 0
	}
	return s.Faster + s.Slower
}

// agreementCheck runs an intent's agreement check over its both-correct
// pairs. For cheapest, the arm whose price is higher by more than the
// tolerance missed the cheapest; the check fails when the arm the speed
// comparison found faster missed it in at least 2 more pairs than the
// other. For same, it counts pairs whose answers differ as sets and fails
// at 2.
func agreementCheck(ag Agreement, rows []pairbench.Row, both []pairRef, sp *Speed) *AgreementCheck {
	ch := &AgreementCheck{Kind: ag.Kind}
	for _, p := range both {
		cv, okC := lookup(rows[p.c].Answer.Extracted, ag.Field)
		tv, okT := lookup(rows[p.t].Answer.Extracted, ag.Field)
		if !okC || !okT {
			ch.Unreadable++
			continue
		}
		switch ag.Kind {
		case AgreeCheapest:
			cp, okC := price(cv)
			tp, okT := price(tv)
			if !okC || !okT {
				ch.Unreadable++
				continue
			}
			ch.Compared++
			switch {
			case cp-tp > ag.Tolerance:
				ch.Missed.Control++
			case tp-cp > ag.Tolerance:
				ch.Missed.Treatment++
			}
		case AgreeSame:
			ch.Compared++
			if !sameSet(cv, tv) {
				ch.Differ++
			}
		default:
			ch.Unreadable++
		}
	}
	switch ag.Kind {
	case AgreeCheapest:
		if sp != nil && sp.Faster != sp.Slower {
			fast, slow := ch.Missed.Treatment, ch.Missed.Control
			if sp.Slower > sp.Faster {
				fast, slow = slow, fast
			}
			ch.Failed = fast-slow >= 2
		}
	case AgreeSame:
		ch.Failed = ch.Differ >= 2
	}
	return ch
}

// lookup follows a dotted path ("items.0.price") through maps and lists;
// "" is the whole value.
func lookup(v map[string]any, path string) (any, bool) {
	if v == nil {
		return nil, false
	}
	var cur any = v
	if path == "" {
		return cur, true
	}
	for _, part := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, cur != nil
}

// price reads a number or a money string such as "$1,234.50".
func price(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		// Keep the first number, ignoring currency signs and thousands
		// separators: "$1,234.50" and "1234.5 USD" read as 1234.5.
		var b strings.Builder
	scan:
		for _, r := range x {
			switch {
			case r >= '0' && r <= '9', r == '.', r == '-' && b.Len() == 0:
				b.WriteRune(r)
			case r == ',' && b.Len() > 0:
			case b.Len() == 0:
			default:
				break scan
			}
		}
		f, err := strconv.ParseFloat(b.String(), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// sameSet reports whether two answers agree as sets: a list is the set of
// its items, anything else a set of one; strings compare trimmed and
// case-folded, and items compare by their canonical JSON.
func sameSet(x, y any) bool {
	a, b := canonicalSet(x), canonicalSet(y)
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func canonicalSet(v any) map[string]bool {
	items, ok := v.([]any)
	if !ok {
		items = []any{v}
	}
	set := map[string]bool{}
	for _, it := range items {
		b, err := json.Marshal(normalize(it))
		if err != nil {
			b = []byte(fmt.Sprint(it))
		}
		set[string(b)] = true
	}
	return set
}

func normalize(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ToLower(strings.TrimSpace(x))
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	}
	return v
}

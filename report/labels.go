package report

import (
	"fmt"
	"slices"

	"github.com/pairbench/pairbench"
)

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
			"significance was out of reach: with %d both-correct and %d discordant pairs the smallest attainable adjusted p values are %.3g (speed) and %.3g (accuracy), above α = %g",
			speedPairs(in.Speed), in.Accuracy.Discordant, in.MinP.Speed, in.MinP.Accuracy, alpha)
	}
	sigS := in.Speed != nil && in.Speed.Tested && in.Speed.PAdj <= alpha
	sigA := in.Accuracy.Tested && in.Accuracy.PAdj <= alpha
	faster := in.Speed != nil && in.Speed.Speedup.Est > 1
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

func speedPairs(s *Speed) int {
	if s == nil {
		return 0
	}
	return s.Pairs
}

// agreementCheck runs an intent's agreement check over its both-correct
// pairs. For cheapest, the arm whose price is higher by more than the
// tolerance missed the cheapest; the check fails when the arm the speed
// comparison found faster missed it in at least 2 more pairs than the
// other. For same, it counts pairs whose answers differ as sets and fails
// at 2.
func agreementCheck(ag Agreement, both []pairRef, sp *Speed) *AgreementCheck {
	ch := &AgreementCheck{Kind: ag.Kind}
	for _, p := range both {
		// Answers are read as grading reads them (pairbench.Lookup, Price,
		// AsSet), so a price or a set means the same here as in a rule.
		cv, okC := p.x[0].answer()
		tv, okT := p.x[1].answer()
		if !okC || !okT || cv == nil || tv == nil {
			ch.Unreadable++
			continue
		}
		switch ag.Kind {
		case pairbench.AgreeCheapest:
			cp, okC := pairbench.Price(cv)
			tp, okT := pairbench.Price(tv)
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
		case pairbench.AgreeSame:
			ch.Compared++
			if !slices.Equal(pairbench.AsSet(cv), pairbench.AsSet(tv)) {
				ch.Differ++
			}
		default:
			ch.Unreadable++
		}
	}
	switch ag.Kind {
	case pairbench.AgreeCheapest:
		if sp != nil && sp.Speedup.Est != 1 {
			fast, slow := ch.Missed.Treatment, ch.Missed.Control
			if sp.Speedup.Est < 1 {
				fast, slow = slow, fast
			}
			ch.Failed = fast-slow >= 2
		}
	case pairbench.AgreeSame:
		ch.Failed = ch.Differ >= 2
	}
	return ch
}

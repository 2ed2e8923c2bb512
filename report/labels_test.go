package report

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// labelCase builds an intent with 30 complete pairs, every treatment trial
// adopting, and the given adjusted p values and directions.
func labelCase(speedP, accP float64, faster, better bool) Intent {
	in := Intent{
		Pairs:     PairCounts{Planned: 30, Seen: 30, Complete: 30},
		Treatment: ArmStats{Adoption: &Proportion{X: 30, N: 30}},
		MinP:      MinP{Speed: 1e-6, Accuracy: 1e-6},
		Speed:     &Speed{Faster: 5, Slower: 15, Speedup: stats.ExactInterval{Est: 0.7}, Family: Family{Tested: true, PAdj: speedP}},
		Table:     Table{BothCorrect: 20, TreatmentOnly: 2, ControlOnly: 8},
		Accuracy:  Accuracy{Discordant: 10, Family: Family{Tested: true, PAdj: accP}},
	}
	if faster {
		in.Speed.Faster, in.Speed.Slower, in.Speed.Speedup.Est = 15, 5, 1.4
	}
	if better {
		in.Table.TreatmentOnly, in.Table.ControlOnly = 8, 2
	}
	return in
}

func TestDecide(t *testing.T) {
	const sig, ns = 0.01, 0.5
	failed := &AgreementCheck{Kind: pairbench.AgreeSame, Differ: 2, Failed: true}
	for _, tc := range []struct {
		name  string
		in    func() Intent
		stage *DomainAdoption
		want  pairbench.Label
	}{
		{"faster", func() Intent { return labelCase(sig, ns, true, false) }, nil, pairbench.Faster},
		{"faster, accuracy worse but not significantly", func() Intent { return labelCase(sig, ns, true, false) }, nil, pairbench.Faster},
		{"slower", func() Intent { return labelCase(sig, ns, false, true) }, nil, pairbench.Slower},
		{"more accurate", func() Intent { return labelCase(ns, sig, false, true) }, nil, pairbench.MoreAccurate},
		{"less accurate", func() Intent { return labelCase(ns, sig, true, false) }, nil, pairbench.LessAccurate},
		{"better", func() Intent { return labelCase(sig, sig, true, true) }, nil, pairbench.Better},
		{"mixed: faster but less accurate", func() Intent { return labelCase(sig, sig, true, false) }, nil, pairbench.Mixed},
		{"mixed: slower but more accurate", func() Intent { return labelCase(sig, sig, false, true) }, nil, pairbench.Mixed},
		{"slower and less accurate", func() Intent { return labelCase(sig, sig, false, false) }, nil, pairbench.LessAccurate},
		{"no signal", func() Intent { return labelCase(ns, ns, true, true) }, nil, pairbench.NoSignal},
		{"p exactly alpha is significant", func() Intent { return labelCase(0.05, ns, true, true) }, nil, pairbench.Faster},
		{"agreement failure turns faster into mixed", func() Intent {
			in := labelCase(sig, ns, true, false)
			in.Check = failed
			return in
		}, nil, pairbench.Mixed},
		{"agreement failure turns better into mixed", func() Intent {
			in := labelCase(sig, sig, true, true)
			in.Check = failed
			return in
		}, nil, pairbench.Mixed},
		{"agreement failure leaves accuracy labels alone", func() Intent {
			in := labelCase(ns, sig, true, true)
			in.Check = failed
			return in
		}, nil, pairbench.MoreAccurate},
		{"no adoption in any pair", func() Intent {
			in := labelCase(sig, sig, true, true)
			in.Treatment.Adoption.X = 0
			return in
		}, nil, pairbench.NoAdoption},
		{"no adoption at the adoption stage", func() Intent {
			return Intent{Treatment: ArmStats{Adoption: &Proportion{}}, MinP: MinP{1, 1}}
		}, &DomainAdoption{Domain: "d", Trials: 3}, pairbench.NoAdoption},
		{"adoption stage used tools but no pairs yet", func() Intent {
			return Intent{Treatment: ArmStats{Adoption: &Proportion{}}, MinP: MinP{1, 1}}
		}, &DomainAdoption{Domain: "d", Trials: 3, Adopted: 1}, pairbench.Inconclusive},
		{"more than a fifth lost to aborts", func() Intent {
			in := labelCase(sig, sig, true, true)
			in.Pairs.LostToAborts = 7
			return in
		}, nil, pairbench.Inconclusive},
		{"exactly a fifth lost is not too many", func() Intent {
			in := labelCase(sig, ns, true, true)
			in.Pairs.LostToAborts = 6
			return in
		}, nil, pairbench.Faster},
		{"significance out of reach", func() Intent {
			in := labelCase(ns, ns, true, true)
			in.MinP = MinP{Speed: 0.0625, Accuracy: 0.5}
			return in
		}, nil, pairbench.Inconclusive},
		{"one family in reach is enough", func() Intent {
			in := labelCase(ns, ns, true, true)
			in.MinP = MinP{Speed: 0.0625, Accuracy: 0.01}
			return in
		}, nil, pairbench.NoSignal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in()
			got, why := decide(&in, tc.stage, 0.05)
			assert.Equal(t, tc.want, got, why)
			assert.NotEmpty(t, why)
		})
	}
}

// answerPair is a both-correct pair whose answers are c and t, kept as a
// Builder keeps them for an agreement check on field.
func answerPair(c, t map[string]any, field string) pairRef {
	ag := &Agreement{Field: field}
	rc, xc := newRecord(&pairbench.Row{Outcome: pairbench.Correct, Answer: pairbench.Answer{Extracted: c}}, ag)
	rt, xt := newRecord(&pairbench.Row{Outcome: pairbench.Correct, Answer: pairbench.Answer{Extracted: t}}, ag)
	return pairRef{c: &rc, t: &rt, x: [2]*recordExtra{xc, xt}}
}

func TestAgreementCheck(t *testing.T) {
	answers := func(field string, pairs ...[2]map[string]any) []pairRef {
		var refs []pairRef
		for _, p := range pairs {
			refs = append(refs, answerPair(p[0], p[1], field))
		}
		return refs
	}
	price := func(c, t any) [2]map[string]any {
		return [2]map[string]any{{"fare": map[string]any{"price": c}}, {"fare": map[string]any{"price": t}}}
	}
	cheapest := Agreement{Kind: pairbench.AgreeCheapest, Field: "fare.price", Tolerance: 1}
	treatmentFaster := &Speed{Speedup: stats.ExactInterval{Est: 1.8}}

	refs := answers(cheapest.Field, price(100.0, 105.0), price("$1,200.00", 1203.5), price(50.0, 50.5), price(80.0, "n/a"), price(70.0, 60.0))
	ch := agreementCheck(cheapest, refs, treatmentFaster)
	assert.Equal(t, ArmCount{Control: 1, Treatment: 2}, ch.Missed)
	assert.Equal(t, 4, ch.Compared)
	assert.Equal(t, 1, ch.Unreadable)
	assert.False(t, ch.Failed, "treatment missed only one more")

	refs = answers(cheapest.Field, price(100.0, 105.0), price(10.0, 12.0), price(50.0, 50.5))
	ch = agreementCheck(cheapest, refs, treatmentFaster)
	assert.True(t, ch.Failed, "the faster arm missed the cheapest in 2 more pairs")
	ch = agreementCheck(cheapest, refs, &Speed{Speedup: stats.ExactInterval{Est: 0.6}})
	assert.False(t, ch.Failed, "control was faster and missed less")

	same := Agreement{Kind: pairbench.AgreeSame, Field: "titles"}
	list := func(c, t []any) [2]map[string]any { return [2]map[string]any{{"titles": c}, {"titles": t}} }
	refs = answers(same.Field,
		list([]any{"Dune", "Emma"}, []any{" emma", "DUNE"}), // same set
		list([]any{"Dune", "Emma"}, []any{"Dune"}),          // differs
		list([]any{"Dune", "Dune"}, []any{"Dune"}),          // same as sets
	)
	ch = agreementCheck(same, refs, treatmentFaster)
	assert.Equal(t, 1, ch.Differ)
	assert.False(t, ch.Failed)
	refs = answers(same.Field, list([]any{"A"}, []any{"B"}), list([]any{1.0}, []any{2.0}))
	assert.True(t, agreementCheck(same, refs, nil).Failed)
}

func TestAgreementReadsAnswersAsGradingDoes(t *testing.T) {
	c := map[string]any{"price": "12,50 €", "titles": []any{"3", "Dune  Messiah"}}
	tr := map[string]any{"price": 12.5, "titles": []any{3.0, "dune messiah"}}
	ch := agreementCheck(Agreement{Kind: pairbench.AgreeCheapest, Field: "price", Tolerance: 0.001}, []pairRef{answerPair(c, tr, "price")}, nil)
	assert.Equal(t, 1, ch.Compared)
	assert.Equal(t, ArmCount{}, ch.Missed, "a decimal comma reads as grading reads it")
	ch = agreementCheck(Agreement{Kind: pairbench.AgreeSame, Field: "titles"}, []pairRef{answerPair(c, tr, "titles")}, nil)
	assert.Equal(t, 0, ch.Differ, "3 and \"3\", and inner white space, compare as grading compares them")
	tr["price"] = nil
	ch = agreementCheck(Agreement{Kind: pairbench.AgreeCheapest, Field: "price"}, []pairRef{answerPair(c, tr, "price")}, nil)
	assert.Equal(t, 1, ch.Unreadable, "a null answer cannot be compared")
}

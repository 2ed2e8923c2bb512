package stats

import "math"

// ScoreDiff compares paired scores, control sc[i] against treatment st[i]
// (same length, not modified), by the exact Wilcoxon signed-rank test on
// st − sc. It returns the Hodges–Lehmann estimate of the difference with
// the interval at 1 − alpha that inverts the test, and the test's
// two-sided p at no difference: p > alpha exactly when the interval holds
// 0.
func ScoreDiff(sc, st []float64, alpha float64) (ExactInterval, float64) {
	d := make([]float64, len(sc))
	for i := range sc {
		d[i] = st[i] - sc[i]
	}
	s := NewRankSample(d)
	null := NullFor(s.N())
	c := null.Critical(alpha)
	p := s.P(null)
	return s.intervalAt(c, 1-RejectRate(null, c), p > alpha, func(x float64) float64 { return x }, math.Inf(-1), 0), p
}

// mean is the mean of xs (not empty).
func Mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

package report

import "github.com/pairbench/pairbench/stats"

// compositeRatios returns, for every complete pair, its log ratio in time
// to a correct answer, log(control/treatment) with a failed trial slower
// than any correct one: both correct, the log ratio of their wall times;
// only treatment correct, +FailedRatio; only control, −FailedRatio;
// neither, 0 (a tie). Unlike the speed over both-correct pairs, it is not
// biased when treatment changes how often, and on which trials, an arm
// fails.
func compositeRatios(pairs []pairRef) []float64 {
	d := make([]float64, len(pairs))
	for i, p := range pairs {
		switch cc, tc := p.c.correct(), p.t.correct(); {
		case cc && tc:
			d[i] = stats.LogRatio(p.c.wall, p.t.wall)
		case tc:
			d[i] = stats.FailedRatio
		case cc:
			d[i] = -stats.FailedRatio
		}
	}
	return d
}

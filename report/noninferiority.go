package report

import (
	"fmt"

	"github.com/pairbench/pairbench/stats"
)

// Non-inferiority: is head (treatment) no worse than base (control) by
// more than the margins the registry declares? Two one-sided tests per
// dimension (docs/statistics.md, Non-inferiority):
//
//   - accuracy: the paired difference in the share correct, π_b − π_c,
//     against −δ; the exact unconditional test on Tango's score statistic,
//     its p the largest over the nuisance parameter on the margin;
//   - speed: the exact signed-rank test of the per-pair log time ratios
//     shifted by the margin, log(control/treatment) + log(1 + m), against 0.
//
// "not worse" needs both dimensions shown within their margins at α (an
// intersection–union test: no adjustment); "worse" needs one dimension
// shown beyond its margin, at α/(2k) over the k intents compared
// (Bonferroni over both dimensions and every intent), so that identical
// arms are called worse anywhere in a run at most at α.

// Margins are how much worse head may be than base and still be "not
// worse".
type Margins struct {
	// AccuracyPoints is how many percentage points less often head may
	// be correct.
	AccuracyPoints float64 `json:"accuracy_points"`
	// SlowerPercent is how much slower, in percent of base's time, head's
	// typical pair may be.
	SlowerPercent float64 `json:"slower_percent"`
}

// DefaultMargins are the margins of a registry that declares none: no
// more than 5 points less accurate and no more than 10% slower.
var DefaultMargins = Margins{AccuracyPoints: 5, SlowerPercent: 10}

// Check refuses margins no test can use.
func (m Margins) Check() error {
	if !(m.AccuracyPoints > 0 && m.AccuracyPoints < 100) {
		return fmt.Errorf("accuracy margin %v points: want more than 0 and less than 100", m.AccuracyPoints)
	}
	if !(m.SlowerPercent > 0 && m.SlowerPercent <= 1000) {
		return fmt.Errorf("speed margin %v%%: want more than 0 and at most 1000", m.SlowerPercent)
	}
	return nil
}

// NIResult is a non-inferiority verdict.
type NIResult string

const (
	NotWorse       NIResult = "not worse"
	Worse          NIResult = "worse"
	NIInconclusive NIResult = "inconclusive"
)

// NonInferiority is an intent's (or a run's) verdict on head against
// base, at the plan's margins.
type NonInferiority struct {
	Result NIResult `json:"result"`
	// Why says in words which test gave Result.
	Why      string  `json:"why"`
	Margins  Margins `json:"margins"`
	Accuracy NITest  `json:"accuracy"`
	// Speed is over both-correct pairs; nil when there are none.
	Speed *NITest `json:"speed,omitempty"`
	// WorseLevel is the level each "worse" test is held to: α/(2k).
	WorseLevel float64 `json:"worse_level"`
}

// NITest is one dimension's two one-sided tests at its margin.
type NITest struct {
	// Pairs counts the pairs the tests rest on.
	Pairs int `json:"pairs"`
	// PNotWorse is the p of "head is worse by the margin or more"
	// (small: shown within the margin); PWorse that of "head is within
	// the margin" (small: shown beyond it).
	PNotWorse float64 `json:"p_not_worse"`
	PWorse    float64 `json:"p_worse"`
}

// nonInferiority decides an intent's verdict from its table and speed
// sample at margins; k is the number of intents compared in the run.
func nonInferiority(t Table, speed *stats.RankSample, m Margins, alpha float64, k int) *NonInferiority {
	ni := &NonInferiority{Margins: m, WorseLevel: alpha / float64(2*max(k, 1))}
	delta := m.AccuracyPoints / 100
	ni.Accuracy.Pairs = t.N()
	ni.Accuracy.PNotWorse, ni.Accuracy.PWorse = stats.AccuracyNI(t.TreatmentOnly, t.ControlOnly, t.N(), delta)
	if speed != nil && speed.N() > 0 {
		st := &NITest{Pairs: speed.N()}
		st.PNotWorse, st.PWorse = speed.NI(stats.NullFor(speed.N()), 1+m.SlowerPercent/100)
		ni.Speed = st
	}
	accWorse := ni.Accuracy.PWorse <= ni.WorseLevel
	speedWorse := ni.Speed != nil && ni.Speed.PWorse <= ni.WorseLevel
	accOK := ni.Accuracy.PNotWorse <= alpha
	speedOK := ni.Speed != nil && ni.Speed.PNotWorse <= alpha
	switch {
	case accWorse && speedWorse:
		ni.Result, ni.Why = Worse, fmt.Sprintf("head was shown more than %g points less accurate and more than %g%% slower than base", m.AccuracyPoints, m.SlowerPercent)
	case accWorse:
		ni.Result, ni.Why = Worse, fmt.Sprintf("head was shown more than %g points less accurate than base (p = %.3g ≤ %.3g)", m.AccuracyPoints, ni.Accuracy.PWorse, ni.WorseLevel)
	case speedWorse:
		ni.Result, ni.Why = Worse, fmt.Sprintf("head was shown more than %g%% slower than base (p = %.3g ≤ %.3g)", m.SlowerPercent, ni.Speed.PWorse, ni.WorseLevel)
	case accOK && speedOK:
		ni.Result, ni.Why = NotWorse, fmt.Sprintf("head was shown at most %g points less accurate (p = %.3g) and at most %g%% slower (p = %.3g) than base, at α = %g",
			m.AccuracyPoints, ni.Accuracy.PNotWorse, m.SlowerPercent, ni.Speed.PNotWorse, alpha)
	case ni.Speed == nil:
		ni.Result, ni.Why = NIInconclusive, "no pair had both arms correct, so speed could not be compared"
	default:
		var open []string
		if !accOK {
			open = append(open, fmt.Sprintf("accuracy within %g points (p = %.3g)", m.AccuracyPoints, ni.Accuracy.PNotWorse))
		}
		if !speedOK {
			open = append(open, fmt.Sprintf("speed within %g%% (p = %.3g)", m.SlowerPercent, ni.Speed.PNotWorse))
		}
		ni.Result, ni.Why = NIInconclusive, fmt.Sprintf("not shown at α = %g: %s; more pairs may decide it", alpha, joinAnd(open))
	}
	return ni
}

// RunNonInferiority is the run's verdict from its intents': worse when
// one is, not worse when all are, else inconclusive; nil without any.
func RunNonInferiority(intents []Intent) NIResult {
	var out NIResult
	for _, in := range intents {
		if in.NonInferiority == nil {
			continue
		}
		switch r := in.NonInferiority.Result; {
		case r == Worse:
			return Worse
		case out == "" || out == NotWorse:
			out = r
		}
	}
	return out
}

// nonInferiorities gives every planned intent with complete pairs its
// head-against-base verdict at plan's margins, but for those of a new
// domain (benched against no tools).
func (a *analysis) nonInferiorities(plan Plan, intents []Intent, work []intentWork) NIResult {
	m := *plan.Margins
	fresh := map[string]bool{}
	for _, p := range plan.Intents {
		fresh[p.ID] = p.NoBaseTools
	}
	var idx []int
	for i := range intents {
		if !intents[i].Unplanned && !fresh[intents[i].ID] && intents[i].Pairs.Complete > 0 {
			idx = append(idx, i)
		}
	}
	parallel(len(idx), func(k int) {
		in, w := &intents[idx[k]], work[idx[k]]
		in.NonInferiority = nonInferiority(in.Table, w.speed, m, a.alpha, len(idx))
	})
	return RunNonInferiority(intents)
}

package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Planning before spending (docs/statistics.md, Planning): before the
// first trial, what a plan of n pairs per intent can show. The run's
// verdict is decided at α/3 (each pooled test's level before the other
// rejects); an intent's labels at α/3 too (the intents' family's level
// when neither pooled test rejects), among 2K tests (each intent's speed
// and accuracy), at best every pair usable.

// Power model of the smallest detectable effects: each trial's log time
// with its own normal noise of this σ (the power table's lognormal model),
// each arm correct with chance planArmCorrect, and accuracy from a
// control share of planControl, the arms' correctness independent.
const (
	planSigma   = 0.3
	planControl = 0.7
	planPower   = 0.8
	// planArmCorrect is each arm's assumed chance of a correct answer when
	// planning speed.
	planArmCorrect = 0.9
)

// PlanCheck is what a plan can show, before any trial.
type PlanCheck struct {
	Alpha float64 `json:"alpha"`
	// Pairs is the pairs planned per intent; Intents counts the benched
	// intents (placebo ones are not).
	Pairs   int `json:"pairs"`
	Intents int `json:"intents"`
	// Verdict is the run-level verdict's reach, over all benched intents;
	// Intent is one intent's, in the intents' family.
	Verdict PlanReach `json:"verdict"`
	Intent  PlanReach `json:"intent"`
}

// PlanReach is whether labels can be reached at a level and the smallest
// effects detected with 80% power there.
type PlanReach struct {
	// Level is the significance level the labels are decided at; Pairs the
	// pairs the tests pool.
	Level float64 `json:"level"`
	Pairs int     `json:"pairs"`
	// Attainable is whether some outcome of these pairs reaches Level:
	// 2·½ⁿ ≤ Level for the tests' n pairs, after the family's adjustment.
	Attainable bool `json:"attainable"`
	// Speedup and Accuracy are the smallest speedup (control's time over
	// treatment's) and accuracy gain (share points, from planControl) that
	// give a label with 80% power under the planning model; 0 when none
	// does.
	Speedup  float64 `json:"speedup"`
	Accuracy float64 `json:"accuracy"`
}

// CheckPlan says what pairs per intent over intents benched intents can show
// at alpha.
func CheckPlan(intents, pairs int, alpha float64) PlanCheck {
	c := PlanCheck{Alpha: alpha, Pairs: pairs, Intents: intents}
	level := verdictLevel(intents, alpha)
	c.Verdict = reach(max(1, intents), pairs, level, 1)
	c.Intent = reach(1, pairs, level, 2*intents)
	return c
}

// verdictLevel is the level the run's verdict over intents benched intents
// is decided at in a run at alpha, before either pooled test rejects: α/3,
// or α for one intent, whose tests are the verdict's.
func verdictLevel(intents int, alpha float64) float64 {
	if intents <= 1 {
		return alpha
	}
	return alpha / 3
}

// VerdictAttainable is CheckPlan's Verdict.Attainable without the power
// figures, which cost a simulation: whether some outcome of pairs per
// intent over intents benched intents reaches the verdict at alpha.
func VerdictAttainable(intents, pairs int, alpha float64) bool {
	return attainable(max(1, intents), pairs, verdictLevel(intents, alpha))
}

// attainable reports whether strata of n pairs each can reach level l:
// 2·½ⁿ ≤ l over all their pairs.
func attainable(strata, n int, l float64) bool { return n > 0 && MinSignP(strata*n) <= l }

// reach is what strata of n pairs each can show at level, tested among m
// tests alike (Holm's first step: level/m).
func reach(strata, n int, level float64, m int) PlanReach {
	l := level / float64(max(1, m))
	r := PlanReach{Level: l, Pairs: strata * n, Attainable: attainable(strata, n, l)}
	if r.Attainable {
		r.Speedup = detectableSpeedup(strata, n, l)
		r.Accuracy = detectableGain(strata*n, l)
	}
	return r
}

// Reachable reports whether any label can be reached: the verdict or an
// intent's.
func (c PlanCheck) Reachable() bool { return c.Verdict.Attainable || c.Intent.Attainable }

// PairsForVerdict is the fewest pairs per intent at which the run's verdict
// can be reached.
func PairsForVerdict(intents int, alpha float64) int {
	return PairsForVerdictAt(intents, func(int) float64 { return alpha })
}

// PairsForVerdictAt is PairsForVerdict for a run decided at level(n) when
// it has n pairs per intent (the last look's share of α, which depends on
// where the looks fall).
func PairsForVerdictAt(intents int, level func(pairs int) float64) int {
	for n := 1; ; n++ {
		if VerdictAttainable(intents, n, level(n)) {
			return n
		}
	}
}

// planReps is the number of simulated runs behind each power figure.
const planReps = 300

// detectableSpeedup is the smallest speedup the run's speed claim (van
// Elteren over strata of n pairs, one stratum when strata is 1, with the
// composite test where SpeedClaimP needs it) detects at level with 80%
// power under the planning model: each arm correct with chance
// planArmCorrect, a pair's log ratio normal with mean log(speedup) and
// σ√2. Power is simulated (planReps runs, the tests' normal
// approximation, a fixed seed, so the same plan always gets the same
// figure) and the speedup found by bisection; 0 when even a 4× speedup is
// not detected.
func detectableSpeedup(strata, n int, level float64) float64 {
	power := func(delta float64) float64 { return speedPower(strata, n, level, delta) }
	lo, hi := 0.0, math.Log(4)
	if power(hi) < planPower {
		return 0
	}
	for range 10 {
		mid := (lo + hi) / 2
		if power(mid) >= planPower {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Exp(hi)
}

// speedPower is the power of the run's speed claim over strata of n pairs
// at level for a log speedup delta under the planning model
// (detectableSpeedup).
func speedPower(strata, n int, level, delta float64) float64 {
	rng := rand.New(rand.NewPCG(uint64(strata), uint64(n)))
	hits := 0
	cond, comp := make([][]float64, strata), make([][]float64, strata)
	for range planReps {
		b, c := 0, 0
		for k := range cond {
			cond[k], comp[k] = cond[k][:0], comp[k][:0]
			for range n {
				d := delta + planSigma*math.Sqrt2*rng.NormFloat64()
				cc, tc := rng.Float64() < planArmCorrect, rng.Float64() < planArmCorrect
				switch {
				case cc && tc:
					cond[k] = append(cond[k], d)
				case tc:
					d, b = FailedRatio, b+1
				case cc:
					d, c = -FailedRatio, c+1
				default:
					d = 0
				}
				comp[k] = append(comp[k], d)
			}
		}
		s, t := vanElterenBy(cond, false), vanElterenBy(comp, false)
		if SpeedClaimP(s.P, s.Faster, t.P, t.Faster, b, c) <= level && s.Faster {
			hits++
		}
	}
	return float64(hits) / planReps
}

// PlanningSpeedup is the effect a plan is judged by when it chooses its
// looks (Design.ForPlan): the default effect of --pairs auto.
const PlanningSpeedup = 1.5

// VerdictPower is the chance, under the planning model, that the run's
// verdict over intents benched intents of pairs pairs each, decided at
// alpha in one look, finds treatment faster when it is speedup times as
// fast (simulated as for the smallest detectable speedup, with a fixed
// seed).
func VerdictPower(intents, pairs int, alpha, speedup float64) float64 {
	if !VerdictAttainable(intents, pairs, alpha) {
		return 0
	}
	return speedPower(max(1, intents), pairs, verdictLevel(intents, alpha), math.Log(speedup))
}

// detectableGain is the smallest gain in the share correct, from
// planControl, that exact McNemar on n pairs detects at level with 80%
// power (McNemarPower), the two arms' correctness independent; 0 when even
// the largest gain does not.
func detectableGain(n int, level float64) float64 {
	power := func(g float64) float64 {
		pt := planControl + g
		return McNemarPower(n, pt*(1-planControl), planControl*(1-pt), level)
	}
	hi := 1 - planControl
	if power(hi) < planPower {
		return 0
	}
	lo := 0.0
	for range 30 {
		mid := (lo + hi) / 2
		if power(mid) >= planPower {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Effect is an effect a run is planned to detect: a speedup (control's
// time over treatment's, above 1) or an accuracy gain in share points.
type Effect struct {
	Speedup  float64
	Accuracy float64
}

// ParseEffect reads an effect: "1.5x" (a speedup) or "+20pp" (an accuracy
// gain of 20 points from 70%).
func ParseEffect(s string) (Effect, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	if v, ok := strings.CutSuffix(t, "x"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 1) || math.IsInf(f, 0) {
			return Effect{}, fmt.Errorf("effect %q: a speedup is a number above 1 followed by x, as in 1.5x", s)
		}
		return Effect{Speedup: f}, nil
	}
	if v, ok := strings.CutSuffix(t, "pp"); ok {
		f, err := strconv.ParseFloat(strings.TrimPrefix(v, "+"), 64)
		if err != nil || !(f > 0) || f > 100*(1-planControl) {
			return Effect{}, fmt.Errorf("effect %q: an accuracy gain is +N pp with 0 < N ≤ %g (from %g%% correct)", s, 100*(1-planControl), 100*planControl)
		}
		return Effect{Accuracy: f / 100}, nil
	}
	return Effect{}, fmt.Errorf("effect %q: want a speedup such as 1.5x or an accuracy gain such as +20pp", s)
}

func (e Effect) String() string {
	if e.Speedup > 0 {
		return strconv.FormatFloat(e.Speedup, 'g', -1, 64) + "×"
	}
	return "+" + strconv.FormatFloat(100*e.Accuracy, 'g', -1, 64) + " pp"
}

// detects reports whether r detects e with 80% power.
func (r PlanReach) detects(e Effect) bool {
	switch {
	case !r.Attainable:
		return false
	case e.Speedup > 0:
		return r.Speedup > 0 && r.Speedup <= e.Speedup
	}
	return r.Accuracy > 0 && r.Accuracy <= e.Accuracy
}

// ErrNoPairs says no number of pairs up to the limit detects the effect.
var ErrNoPairs = errors.New("no number of pairs up to 1,000 per intent detects it")

// AutoPairs is the fewest pairs per intent over intents benched intents
// that make the run's verdict attainable and detect e with 80% power under
// the planning model (docs/statistics.md, Planning).
func AutoPairs(intents int, alpha float64, e Effect) (int, error) {
	return AutoPairsAt(intents, func(int) float64 { return alpha }, e)
}

// AutoPairsAt is AutoPairs for a run decided at level(n) when it has n
// pairs per intent (the last look's share of α).
func AutoPairsAt(intents int, level func(pairs int) float64, e Effect) (int, error) {
	ok := func(n int) bool { return CheckPlan(intents, n, level(n)).Verdict.detects(e) }
	lo, hi := 1, 2
	for !ok(hi) {
		if hi >= 1000 {
			return 0, fmt.Errorf("detect %s over %d %s: %w", e, intents, intentsWord(intents), ErrNoPairs)
		}
		lo, hi = hi, min(1000, 2*hi)
	}
	for lo+1 < hi { // ok(hi), and every n ≤ lo fails or is untested
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if ok(lo) {
		return lo, nil
	}
	return hi, nil
}

// Text describes the check in a few lines for the plan's log and refusal.
func (c PlanCheck) Text() string {
	var b strings.Builder
	line := func(what string, r PlanReach) {
		if !r.Attainable {
			fmt.Fprintf(&b, "%s: no label is attainable (%d pairs give at best p %.3g, above the %.3g it needs)\n", what, r.Pairs, MinSignP(r.Pairs), r.Level)
			return
		}
		speed := "no speedup up to 4×"
		if r.Speedup > 0 {
			speed = fmt.Sprintf("a speedup of %.2f× or more", math.Ceil(100*r.Speedup)/100)
		}
		gain := fmt.Sprintf("no accuracy gain up to +%.0f pp", 100*(1-planControl))
		if r.Accuracy > 0 {
			gain = fmt.Sprintf("an accuracy gain of +%.0f pp or more", math.Ceil(100*r.Accuracy))
		}
		fmt.Fprintf(&b, "%s: labels attainable at %.3g over %d pairs; detected with 80%% power: %s, %s (planning model: each arm %.0f%% correct, control %.0f%% for accuracy)\n",
			what, r.Level, r.Pairs, speed, gain, 100*planArmCorrect, 100*planControl)
	}
	line(fmt.Sprintf("run's verdict, pooled over %d %s", c.Intents, intentsWord(c.Intents)), c.Verdict)
	line(fmt.Sprintf("each intent, %d pairs", c.Pairs), c.Intent)
	return strings.TrimSuffix(b.String(), "\n")
}

// intentsWord is "intent" or "intents", as n asks.
func intentsWord(n int) string {
	if n == 1 {
		return "intent"
	}
	return "intents"
}

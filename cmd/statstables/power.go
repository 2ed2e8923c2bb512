package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/pairbench/pairbench/stats"
)

// A timeModel draws one trial's log wall-time noise; the trial's time is
// base · speed · exp(noise), the base shared by the pair's two trials.
type timeModel struct {
	name  string
	noise func(r *rand.Rand) float64
	// round, when positive, rounds times to this many seconds (ties).
	round float64
}

// timeModels are the distributions the power simulation covers.
var timeModels = []timeModel{
	{"lognormal (σ 0.3)", func(r *rand.Rand) float64 { return 0.3 * r.NormFloat64() }, 0},
	{"heavy tails (t₃, scale 0.25)", func(r *rand.Rand) float64 { return 0.25 * studentT3(r) }, 0},
	{"stuck trials (σ 0.25, 10% take 3×)", func(r *rand.Rand) float64 {
		e := 0.25 * r.NormFloat64()
		if r.IntN(10) == 0 {
			e += math.Log(3)
		}
		return e
	}, 0},
	{"ties (σ 0.3, whole seconds, ~20 s)", func(r *rand.Rand) float64 { return 0.3 * r.NormFloat64() }, 1},
}

// studentT3 draws from Student's t with 3 degrees of freedom.
func studentT3(r *rand.Rand) float64 {
	chi := 0.0
	for range 3 {
		z := r.NormFloat64()
		chi += z * z
	}
	return r.NormFloat64() / math.Sqrt(chi/3)
}

// speedSample draws the log time ratios of n both-correct pairs with a true
// speedup s (control's time over treatment's).
func speedSample(r *rand.Rand, m timeModel, n int, s float64, d []float64) {
	for i := range n {
		base := 20 * math.Exp(0.5*r.NormFloat64())
		tc := base * s * math.Exp(m.noise(r))
		tt := base * math.Exp(m.noise(r))
		if m.round > 0 {
			tc, tt = math.Max(m.round, math.Round(tc/m.round)*m.round), math.Max(m.round, math.Round(tt/m.round)*m.round)
		}
		d[i] = 0
		if tc != tt {
			d[i] = math.Log(tc / tt)
		}
	}
}

// speedTests are the tests compared: the signed-rank test (adopted) and
// the sign test it replaced.
var speedTests = []struct {
	name string
	p    func(t stats.SignedRankTest, d []float64) float64
}{
	{"signed-rank", func(t stats.SignedRankTest, d []float64) float64 { return t.P(d) }},
	{"sign", func(_ stats.SignedRankTest, d []float64) float64 {
		pos, neg := 0, 0
		for _, v := range d {
			switch {
			case v > 0:
				pos++
			case v < 0:
				neg++
			}
		}
		return stats.SignTest(pos, neg)
	}},
}

// speedPower is the simulated chance that test rejects at level with n
// pairs, over reps samples from a stream seeded by the arguments.
func speedPower(m int, test int, n int, s, level float64, reps int) float64 {
	r := rand.New(rand.NewPCG(uint64(1000*m+n), math.Float64bits(s)^uint64(test)))
	t := stats.NewSignedRankTest(n)
	d := make([]float64, n)
	hit := 0
	for range reps {
		speedSample(r, timeModels[m], n, s, d)
		if speedTests[test].p(t, d) <= level {
			hit++
		}
	}
	return float64(hit) / float64(reps)
}

// smallestN is the smallest n in [lo, hi] with power(n) ≥ target, by
// bisection (power grows with n), or 0 when even hi falls short.
func smallestN(lo, hi int, target float64, power func(n int) float64) int {
	if power(hi) < target {
		return 0
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if power(mid) >= target {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

const (
	powerAlpha  = 0.05
	powerTarget = 0.8
	powerReps   = 4000
)

var (
	powerSpeedups = []float64{1.25, 1.5, 2}
	powerFamilies = []int{1, 5, 20}
)

// power writes the power tables: both-correct pairs the speed tests need
// and complete pairs McNemar needs for 80% power, at level α/m, the level
// Holm's first step needs among m intents of which the others have no
// effect (so the figures are what Holm needs at most in that case), and the
// A/A rejection rate of each speed test at α.
func power(w io.Writer) {
	fmt.Fprintf(w, "Speed: both-correct pairs for %.0f%% power (simulated, %d runs a point; — above 400).\n\n", 100*powerTarget, powerReps)
	fmt.Fprint(w, "| time model | test | A/A rejections at α |")
	for _, s := range powerSpeedups {
		for _, m := range powerFamilies {
			fmt.Fprintf(w, " %g×, %d |", s, m)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|---|---|--:|")
	for range len(powerSpeedups) * len(powerFamilies) {
		fmt.Fprint(w, "--:|")
	}
	fmt.Fprintln(w)
	for mi, m := range timeModels {
		for ti, t := range speedTests {
			fmt.Fprintf(w, "| %s | %s | %.3f |", m.name, t.name, speedPower(mi, ti, 30, 1, powerAlpha, 4*powerReps))
			for _, s := range powerSpeedups {
				for _, fam := range powerFamilies {
					n := smallestN(6, 400, powerTarget, func(n int) float64 {
						return speedPower(mi, ti, n, s, powerAlpha/float64(fam), powerReps)
					})
					fmt.Fprintf(w, " %s |", showN(n))
				}
			}
			fmt.Fprintln(w)
		}
	}

	fmt.Fprintf(w, "\nAccuracy: complete pairs for %.0f%% power (exact McNemar power; — above 2000).\n\n", 100*powerTarget)
	fmt.Fprint(w, "| control-only chance |")
	for _, d := range []float64{0.1, 0.2, 0.3} {
		for _, m := range powerFamilies {
			fmt.Fprintf(w, " +%.0f pp, %d |", 100*d, m)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|--:|")
	for range 9 {
		fmt.Fprint(w, "--:|")
	}
	fmt.Fprintln(w)
	for _, row := range accuracyPowerRows() {
		fmt.Fprintln(w, row)
	}
}

// accuracyPowerRows are the rows of the accuracy power table.
func accuracyPowerRows() []string {
	var rows []string
	for _, pc := range []float64{0.05, 0.1, 0.2} {
		row := fmt.Sprintf("| %.2f |", pc)
		for _, d := range []float64{0.1, 0.2, 0.3} {
			for _, fam := range powerFamilies {
				n := smallestN(1, 2000, powerTarget, func(n int) float64 {
					return stats.McNemarPower(n, pc+d, pc, powerAlpha/float64(fam))
				})
				row += fmt.Sprintf(" %s |", showN(n))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func showN(n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprint(n)
}

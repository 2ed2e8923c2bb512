package report

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// fuzzRows decodes bytes into rows: 8 bytes a row, over two intents (one
// with an agreement check), six pair numbers, three attempts and every
// outcome, with a few invalid and adoption-stage rows.
func fuzzRows(data []byte) []pairbench.Row {
	var rows []pairbench.Row
	for len(data) >= 8 {
		b := data[:8]
		data = data[8:]
		r := pairbench.Row{
			V: pairbench.RowVersion, RunID: "fuzz", Intent: fmt.Sprintf("i%d", b[0]%3), Domain: "d.example",
			Stage: pairbench.StagePair, Pair: int(b[1] % 6), Order: pairbench.AB, Arm: pairbench.Control,
			Attempt: 1 + int(b[2]%3), Outcome: pairbench.Outcomes[int(b[3])%len(pairbench.Outcomes)],
			WallSeconds: float64(b[4]), StartDelayMS: int64(b[5]) * 20, Adopted: b[6]&1 == 1, Turns: int(b[6] >> 5),
		}
		if b[1]&8 != 0 {
			r.Order = pairbench.BA
		}
		if b[2]&4 != 0 {
			r.Arm = pairbench.Treatment
		}
		switch b[7] % 16 {
		case 0:
			r.Stage = pairbench.StageAdoption
		case 1:
			r.V = 0 // invalid
		case 2:
			r.WebMCP = []pairbench.Invocation{{Tool: "t", Status: "error", Error: string(b[5:6])}}
		case 3:
			r.CapsHit = []pairbench.Cap{pairbench.CapTime}
		case 4:
			r.NativeTools = []string{"n"}
		}
		price := any(float64(b[7] % 4))
		if b[7]&32 != 0 {
			price = fmt.Sprintf("$%d", b[7]%3)
		}
		r.Answer.Extracted = map[string]any{"p": price, "l": []any{float64(b[7] % 2)}}
		rows = append(rows, r)
	}
	return rows
}

func fuzzPlan() Plan {
	return Plan{RunID: "fuzz", Seed: 3, Intents: []PlanIntent{
		{ID: "i0", Domain: "d.example", Class: pairbench.AnswerAgreement, Pairs: 6, Agreement: &Agreement{Kind: pairbench.AgreeCheapest, Field: "p", Tolerance: 1}},
		{ID: "i1", Domain: "d.example", Class: pairbench.AnswerAgreement, Pairs: 6, Agreement: &Agreement{Kind: pairbench.AgreeSame, Field: "l"}, Placebo: true},
	}}
}

// checkInvariants asserts what must hold for any rows.
func checkInvariants(t *testing.T, rows []pairbench.Row, rep *Report) {
	t.Helper()
	require.NotNil(t, rep)
	assert.Equal(t, len(rows), rep.Run.Attempts+rep.SkippedRows)
	var labels []pairbench.Label
	for _, in := range rep.Intents {
		n := in.Pairs.Complete
		labels = append(labels, in.Label)
		assert.GreaterOrEqual(t, in.Label.Rank(), 0, "known label %q", in.Label)
		assert.Equal(t, n, in.Table.N())
		assert.Equal(t, n, in.Control.N)
		assert.Equal(t, n, in.Treatment.N)
		assert.Equal(t, in.Table.BothCorrect+in.Table.ControlOnly, in.Control.Correct)
		assert.Equal(t, in.Table.BothCorrect+in.Table.TreatmentOnly, in.Treatment.Correct)
		for _, arm := range []ArmStats{in.Control, in.Treatment} {
			sum := 0
			for _, c := range arm.Outcomes {
				sum += c
			}
			assert.Equal(t, n, sum, "outcomes add up")
			assert.Zero(t, arm.Outcomes[pairbench.Aborted])
			assertUnit(t, arm.Rate, 0, 1)
		}
		assertUnit(t, in.Treatment.Adoption.Interval, 0, 1)
		assert.LessOrEqual(t, in.Pairs.Complete+in.Pairs.LostToAborts, in.Pairs.Seen)
		assert.GreaterOrEqual(t, in.Pairs.Missing, 0)
		acc := in.Accuracy
		if acc.Delta != nil {
			assert.True(t, -1 <= *acc.Delta && *acc.Delta <= 1)
		}
		assertP(t, acc.P, acc.PAdj)
		assert.LessOrEqual(t, acc.MidP, acc.P)
		// Every interval is the dual of the test beside it.
		assert.Equal(t, acc.P > rep.Alpha, acc.Share.Contains(0.5), "share interval and McNemar p agree: %+v", acc)
		require.NotNil(t, acc.ShareAdj)
		assert.Equal(t, acc.PAdj > rep.Alpha, acc.ShareAdj.Contains(0.5), "Holm-level share interval and adjusted p agree: %+v", acc)
		assert.Equal(t, acc.PAdj <= rep.Alpha, acc.Tested && acc.P <= acc.Threshold)
		for _, s := range []*Speed{in.Speed, in.Adopters} {
			if s == nil {
				continue
			}
			assert.Equal(t, s.Pairs, s.Faster+s.Slower+s.Ties)
			assert.LessOrEqual(t, s.Pairs, in.Table.BothCorrect)
			assert.LessOrEqual(t, s.Speedup.Lo, s.Speedup.Hi)
			assert.Equal(t, s.P > rep.Alpha, s.Speedup.Contains(1), "interval and signed-rank test agree")
			assertP(t, s.P, s.PAdj)
			if s == in.Speed {
				require.NotNil(t, s.SpeedupAdj)
				assert.Equal(t, s.PAdj > rep.Alpha, s.SpeedupAdj.Contains(1), "Holm-level interval and adjusted p agree")
			} else {
				assert.Nil(t, s.SpeedupAdj)
			}
		}
		assert.GreaterOrEqual(t, in.NoiseProb, 0.0)
		assert.LessOrEqual(t, in.NoiseProb, 1.0)
	}
	if h := rep.Headline; h != nil {
		assert.Equal(t, h.Label, rep.Verdict, "the verdict is the headline's")
		if h.Intents > 1 {
			assert.Equal(t, h.Accuracy.Significant, !h.Accuracy.Share.Contains(0.5), "pooled share interval and pooled McNemar agree")
			assert.Equal(t, h.Speed.Significant, h.Speed.P <= h.Speed.Level)
		}
	} else {
		assert.Equal(t, pairbench.Worst(labels...), rep.Verdict)
	}
	total := 0
	for _, lc := range rep.Run.Labels {
		total += lc.Count
	}
	assert.Equal(t, len(rep.Intents), total, "the histogram counts every intent")
	_, err := json.Marshal(rep)
	assert.NoError(t, err)
}

func assertUnit(t *testing.T, iv stats.Interval, lo, hi float64) {
	t.Helper()
	assert.LessOrEqual(t, lo, iv.Lo, "%+v", iv)
	assert.LessOrEqual(t, iv.Lo, iv.Hi, "%+v", iv)
	assert.LessOrEqual(t, iv.Hi, hi, "%+v", iv)
	if !math.IsNaN(iv.Est) {
		assert.True(t, iv.Lo <= iv.Est && iv.Est <= iv.Hi, "estimate inside: %+v", iv)
	}
}

func assertP(t *testing.T, p, adj float64) {
	t.Helper()
	assert.True(t, 0 <= p && p <= 1, "p %v", p)
	assert.True(t, p <= adj && adj <= 1, "adjusted %v for raw %v", adj, p)
}

func FuzzBuild(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("0123456789abcdefghijklmnopqrstuvwxyz"))
	seed := make([]byte, 0, 8*40)
	for i := range 40 {
		seed = append(seed, byte(i%2), byte(i/2), byte(4*(i%2)), 0, byte(100-40*(i%2)), 50, 1, 16)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		rows := fuzzRows(data)
		checkInvariants(t, rows, Build(fuzzPlan(), rows))
	})
}

func TestBuildInvariantsOnSeeds(t *testing.T) {
	for i := range 50 {
		data := make([]byte, 8*(i*3))
		for j := range data {
			data[j] = byte((j*131 + i*17) ^ (j >> 3))
		}
		rows := fuzzRows(data)
		checkInvariants(t, rows, Build(fuzzPlan(), rows))
	}
}

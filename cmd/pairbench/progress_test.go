package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
)

func trialSpec(intent string, pair int, arm pairbench.Arm, attempt int) runner.TrialSpec {
	job := runner.Job{Intent: intent, Stage: pairbench.StagePair, Pair: pair, Attempt: attempt}
	return runner.TrialSpec{Job: job, Arm: arm, Dir: runner.TrialDir(job, arm)}
}

func TestRenderProgress(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := start.Add(2 * time.Minute)
	s := progressState{
		Start: start,
		Slots: []*slotTrial{
			{Spec: trialSpec("books-count-by-author", 3, pairbench.Treatment, 2), Started: now.Add(-75 * time.Second)},
			nil,
		},
		Pairs: 12, Done: 6, Half: 1, Trials: 8, Aborts: 1, Spend: 0.0642,
	}
	// 8 trials in 2 minutes is 15 s a trial; 2×6−1 = 11 trials are left.
	assert.Equal(t, []string{
		"slot 1  books-count-by-author pair 3 treatment (attempt 2)  1m15s",
		"slot 2  idle",
		"[############............] 6/12 pairs  1 aborted  $0.064  ETA 2m45s",
	}, renderProgress(s, now, 0))

	lines := renderProgress(s, now, 20)
	for _, l := range lines {
		assert.LessOrEqual(t, len([]rune(l)), 20, l)
	}
	assert.Equal(t, "slot 1  books-count-", lines[0])

	s.Trials = 0
	assert.Contains(t, renderProgress(s, now, 0)[2], "ETA ?", "no pace before the first trial")
	s.Done, s.Pairs = 0, 0
	assert.Contains(t, renderProgress(s, now, 0)[2], "[........................] 0/0 pairs")
}

func TestProgressFollowsTrials(t *testing.T) {
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	var logs bytes.Buffer
	p := newProgress(nil, slog.New(slog.NewTextHandler(&logs, nil)), now, 2, 3, 1)

	a := trialSpec("weather-high-oslo", 1, pairbench.Control, 1)
	b := trialSpec("weather-high-oslo", 2, pairbench.Treatment, 1)
	p.started(a)
	p.started(b)
	require.NotNil(t, p.state.Slots[0])
	assert.Equal(t, a.Dir, p.state.Slots[0].Spec.Dir)
	assert.Equal(t, b.Dir, p.state.Slots[1].Spec.Dir)

	row := func(spec runner.TrialSpec, o pairbench.Outcome) pairbench.Row {
		return pairbench.Row{Intent: spec.Job.Intent, Stage: pairbench.StagePair, Pair: spec.Job.Pair, Arm: spec.Arm,
			Attempt: spec.Job.Attempt, TrialDir: spec.Dir, Outcome: o, CostUSD: 0.01}
	}
	clock = clock.Add(10 * time.Second)
	p.recorded(row(a, pairbench.Correct))
	assert.Nil(t, p.state.Slots[0], "the slot is free again")
	assert.Equal(t, 1, p.state.Half)

	// Pair 2's treatment aborts: the pair reruns whole as attempt 2.
	p.recorded(row(b, pairbench.Aborted))
	b2 := trialSpec("weather-high-oslo", 2, pairbench.Treatment, 2)
	p.started(b2)
	assert.Equal(t, b2.Dir, p.state.Slots[0].Spec.Dir, "the first idle slot")
	p.recorded(row(b2, pairbench.Correct))
	p.recorded(row(trialSpec("weather-high-oslo", 2, pairbench.Control, 2), pairbench.Wrong))
	p.recorded(row(trialSpec("weather-high-oslo", 1, pairbench.Treatment, 1), pairbench.Timeout))

	assert.Equal(t, 3, p.state.Done, "one done before, pairs 1 and 2 now")
	assert.Zero(t, p.state.Half)
	assert.Equal(t, 5, p.state.Trials)
	assert.Equal(t, 1, p.state.Aborts)
	assert.InDelta(t, 0.05, p.state.Spend, 1e-9)
	assert.Equal(t, 5, strings.Count(logs.String(), "msg=progress"), "without a terminal, a progress record per trial")
	assert.Contains(t, logs.String(), "pairs_done=3 pairs=3 aborted=1")
	assert.Contains(t, logs.String(), "eta=0s")
}

func TestLiveViewKeepsTheBlockBelowLogs(t *testing.T) {
	var out bytes.Buffer
	v := &liveView{w: &out}
	v.set([]string{"slot 1  idle", "[...] 0/1 pairs"})
	v.Write([]byte("time=... msg=trial\n"))
	v.set([]string{"slot 1  idle", "[###] 1/1 pairs"})
	v.stop()
	v.set([]string{"after stop"})
	v.Write([]byte("report.md\n"))

	const up = "\r\x1b[1A\x1b[2K\x1b[1A\x1b[2K" // erase two lines
	assert.Equal(t,
		"slot 1  idle\n[...] 0/1 pairs\n"+
			up+"time=... msg=trial\n"+"slot 1  idle\n[...] 0/1 pairs\n"+
			up+"slot 1  idle\n[###] 1/1 pairs\n"+
			"report.md\n",
		out.String())

	w, view := liveOutput(&out, "text")
	assert.Nil(t, view, "a buffer is not a terminal")
	assert.Same(t, &out, w)
}

package runner_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/runner"
)

// modelClock records when the agent's model calls start and end.
type modelClock struct {
	mu          sync.Mutex
	first, last time.Time
	next        http.Handler
}

func (m *modelClock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	if m.first.IsZero() {
		m.first = time.Now()
	}
	m.mu.Unlock()
	m.next.ServeHTTP(w, r)
	m.mu.Lock()
	m.last = time.Now()
	m.mu.Unlock()
}

func (m *modelClock) reset() (first, last time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first, last = m.first, m.last
	m.first, m.last = time.Time{}, time.Time{}
	return first, last
}

// BenchmarkTrialOverhead measures what pairbench adds to a trial: the whole
// trial minus the span of the agent's own model turns (first model request
// to last model response), with the start delay at 0. The breakdown
// reports the browser setup (start, registration, load, checks), the agent's
// start until its first model request (sandbox, egress proxy, pi's own
// start, MCP servers connecting) and the rest (grading, teardown). The
// stack is the one pairbench run builds (newStack: a warm compile cache),
// two ways:
//
//   - spare: a spare browser for the slot, as pairbench run keeps. Trials
//     run back to back, so each spare starts during the previous trial's
//     model turns, as in a run: its start is not in the overhead.
//   - cold: no spare; each trial starts its browser, so the browser's
//     start is in the overhead.
//
// The target is a median overhead of at most 1.5 s on a 2-core machine.
//
//	go test ./runner -run '^$' -bench TrialOverhead -benchtime 8x
func BenchmarkTrialOverhead(b *testing.B) {
	b.Run("spare", func(b *testing.B) { benchmarkOverhead(b, 1, []string{"pi"}, "") })
	b.Run("cold", func(b *testing.B) { benchmarkOverhead(b, 0, []string{"pi"}, "") })
}

// BenchmarkAgentOverhead runs the spare variant for every agent in one run,
// interleaved (one trial of each agent in turn, arms alternating), so the
// machine's noise falls on all alike. Per agent, trial-s is the whole
// trial, agent-start-s the agent's start until its first model request
// and overhead-s the whole trial minus the model's turns; the ratios are
// each agent's medians over pi's. Run beside TrialOverhead/spare, pi's
// figures here and there are the same measurement:
//
//	go test ./runner -run '^$' -bench 'TrialOverhead/spare|AgentOverhead' -benchtime 8x
func BenchmarkAgentOverhead(b *testing.B) {
	benchmarkOverhead(b, 1, agent.Names, "pi")
}

// overheads are one agent's trials' figures, in seconds.
type overheads struct {
	name                                      string
	trials                                    *runner.Trials
	trial, overhead, setup, agentStart, after []float64
}

// benchmarkOverhead runs, per iteration, one trial of each named agent on
// one stack (one browser provider with spares, one scripted model) and
// reports each agent's medians, prefixed by its name when there are
// several, and their ratios to base's.
func benchmarkOverhead(b *testing.B, spares int, names []string, base string) {
	s := newStack(b, []string{"weather-high-oslo"}, model.Options{}, func(c *local.Config) { c.Spares = spares })
	clock := &modelClock{next: model.New(resolvedIntents(s), model.Options{})}
	srv := httptest.NewServer(clock)
	defer srv.Close()
	s.model.Close()
	exe, err := os.Executable()
	require.NoError(b, err)

	var all []*overheads
	for _, name := range names {
		t := *s.trials
		plan := *t.Plan
		plan.Model.BaseURL = srv.URL + "/v1"
		plan.Allowlist = append(runner.Allowlist(), agent.HarnessTools(name)...)
		t.Plan, t.RunDir = &plan, rundir.RunDir{Path: b.TempDir()}
		if name != "pi" { // the stack's pi has its compile cache warm, as run's
			a, err := agent.New(name, agent.Config{Tools: tools, HostEnv: []string{"HOME=/root"}, Executable: exe, TempRoot: s.tmp})
			require.NoError(b, err)
			t.Agent = a
		}
		all = append(all, &overheads{name: name, trials: &t})
	}
	for i := 0; b.Loop(); i++ {
		for _, o := range all {
			job := rundir.Job{Intent: "weather-high-oslo", Domain: "weather.example", Stage: pairbench.StagePair,
				Pair: i, Order: pairbench.AB, Attempt: 1}
			arm := pairbench.Arms[i%2]
			start := time.Now()
			row, err := o.trials.Run(context.Background(), runner.TrialSpec{Job: job, Arm: arm, Dir: rundir.TrialDir(job, arm)})
			total := time.Since(start)
			require.NoError(b, err)
			require.Equal(b, pairbench.Correct, row.Outcome, "%s: %s", o.name, row.Reason)
			first, last := clock.reset()
			launched := start.Add(total - time.Duration(row.WallSeconds*float64(time.Second)))
			o.trial = append(o.trial, total.Seconds())
			o.overhead = append(o.overhead, (total - last.Sub(first)).Seconds())
			o.setup = append(o.setup, launched.Sub(start).Seconds())
			o.agentStart = append(o.agentStart, first.Sub(launched).Seconds())
			o.after = append(o.after, start.Add(total).Sub(last).Seconds())
		}
	}
	var baseline *overheads
	for _, o := range all {
		if o.name == base {
			baseline = o
		}
	}
	for _, o := range all {
		prefix := ""
		if len(all) > 1 {
			prefix = o.name + "-"
		}
		b.ReportMetric(median(o.trial), prefix+"trial-s")
		b.ReportMetric(median(o.overhead), prefix+"overhead-s")
		b.ReportMetric(median(o.setup), prefix+"setup-s")
		b.ReportMetric(median(o.agentStart), prefix+"agent-start-s")
		b.ReportMetric(median(o.after), prefix+"grade+teardown-s")
		if baseline != nil && o != baseline {
			b.ReportMetric(median(o.trial)/median(baseline.trial), o.name+"/"+base+"-trial")
			b.ReportMetric(median(o.overhead)/median(baseline.overhead), o.name+"/"+base+"-overhead")
			b.ReportMetric(median(o.agentStart)/median(baseline.agentStart), o.name+"/"+base+"-agent-start")
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

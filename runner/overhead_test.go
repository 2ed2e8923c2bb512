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

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/agent/agents"
	"github.com/pairbench/pairbench/runner/browser/local"
	"github.com/pairbench/pairbench/runner/model"
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
	b.Run("spare", func(b *testing.B) { benchmarkTrialOverhead(b, 1, "pi") })
	b.Run("cold", func(b *testing.B) { benchmarkTrialOverhead(b, 0, "pi") })
}

// BenchmarkAgentOverhead runs the spare variant for every agent side by
// side in one run: agent-start-s is the agent's start until its first model
// request, overhead-s the whole trial minus the model's turns.
//
//	go test ./runner -run '^$' -bench AgentOverhead -benchtime 8x
func BenchmarkAgentOverhead(b *testing.B) {
	for _, name := range agents.Names {
		b.Run(name, func(b *testing.B) { benchmarkTrialOverhead(b, 1, name) })
	}
}

func benchmarkTrialOverhead(b *testing.B, spares int, agentName string) {
	s := newStack(b, []string{"weather-high-oslo"}, model.Options{}, func(c *local.Config) { c.Spares = spares })
	if agentName != "pi" {
		exe, err := os.Executable()
		require.NoError(b, err)
		a, err := agents.New(agentName, agents.Config{Tools: tools, HostEnv: []string{"HOME=/root"}, Executable: exe, TempRoot: s.tmp})
		require.NoError(b, err)
		s.trials.Agent = a
		s.trials.Plan.Allowlist = append(runner.Allowlist(), agents.HarnessTools(agentName)...)
	}
	clock := &modelClock{next: model.New(resolvedIntents(s), model.Options{})}
	srv := httptest.NewServer(clock)
	defer srv.Close()
	s.trials.Plan.Model.BaseURL = srv.URL + "/v1"
	s.model.Close()

	var overhead, setup, agentStart, after []float64
	for i := 0; b.Loop(); i++ {
		job := runner.Job{Intent: "weather-high-oslo", Domain: "weather.example", Stage: pairbench.StagePair,
			Pair: i, Order: pairbench.AB, Attempt: 1}
		arm := pairbench.Arms[i%2]
		start := time.Now()
		row, err := s.trials.Run(context.Background(), runner.TrialSpec{Job: job, Arm: arm, Dir: runner.TrialDir(job, arm)})
		total := time.Since(start)
		require.NoError(b, err)
		require.Equal(b, pairbench.Correct, row.Outcome, row.Reason)
		first, last := clock.reset()
		launched := start.Add(total - time.Duration(row.WallSeconds*float64(time.Second)))
		overhead = append(overhead, (total - last.Sub(first)).Seconds())
		setup = append(setup, launched.Sub(start).Seconds())
		agentStart = append(agentStart, first.Sub(launched).Seconds())
		after = append(after, start.Add(total).Sub(last).Seconds())
	}
	b.ReportMetric(median(overhead), "overhead-s")
	b.ReportMetric(median(setup), "setup-s")
	b.ReportMetric(median(agentStart), "agent-start-s")
	b.ReportMetric(median(after), "grade+teardown-s")
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

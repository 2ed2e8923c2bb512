//go:build e2e

package e2e

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/stretchr/testify/require"
)

var (
	throughput       = flag.Bool("throughput", false, "run TestThroughput: real benches of the demo's intents over 1, 2 and 4 slots (minutes)")
	throughputPairs  = flag.Int("throughput.pairs", 2, "pairs per intent in each TestThroughput bench")
	throughputRounds = flag.Int("throughput.rounds", 1, "times TestThroughput runs each slot count, interleaved")
)

// TestThroughput measures a real bench of the demo's three intents with the
// scripted model over 1, 2 and 4 slots, and prints trials per minute over
// the trial phase (from the runner's "pairs" record to its last trial
// record) side by side. It asserts only that every bench completes: the
// figures depend on the machine.
//
//	go test -tags e2e ./internal/e2e -run TestThroughput -throughput -v
func TestThroughput(t *testing.T) {
	if !*throughput {
		t.Skip("a measurement of minutes; enable with -throughput")
	}
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	slots := []int{1, 2, 4}
	type result struct {
		trials int
		phase  time.Duration
	}
	results := map[int][]result{}
	for round := range *throughputRounds {
		for _, n := range slots {
			e := newBenchEnv(t, bin, tools, fmt.Sprintf("tp-%d-%d", n, round),
				"--intent", "books-cheapest-by-author", "--intent", "books-count-by-author", "--intent", "weather-high-oslo",
				"--pairs", fmt.Sprint(*throughputPairs), "--slots", fmt.Sprint(n))
			cmd, log := e.start(t, t.Context())
			code, sig := clitest.ExitStatus(cmd.Wait())
			require.Zero(t, code, "%d slots (signal %v): %s", n, sig, tail(log))
			rows := clitest.CheckCompleteRun(t, e.runDir())
			phase, err := trialPhase(log)
			require.NoError(t, err)
			results[n] = append(results[n], result{len(rows), phase})
			t.Logf("round %d, %d slots: %d trials in %v", round+1, n, len(rows), phase.Round(100*time.Millisecond))
		}
	}

	rate := func(rs []result) float64 {
		trials, phase := 0, time.Duration(0)
		for _, r := range rs {
			trials += r.trials
			phase += r.phase
		}
		return float64(trials) / phase.Minutes()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nslots  trials  trial phase  trials/min  vs 1 slot\n")
	base := rate(results[1])
	for _, n := range slots {
		trials, phase := 0, time.Duration(0)
		for _, r := range results[n] {
			trials += r.trials
			phase += r.phase
		}
		fmt.Fprintf(&b, "%5d  %6d  %11s  %10.1f  %8.2fx\n", n, trials, phase.Round(100*time.Millisecond), rate(results[n]), rate(results[n])/base)
	}
	t.Log(b.String())
}

// trialPhase reads a runner's text log and returns the time from its
// "pairs" record (trials about to start) to its last "trial" record.
func trialPhase(logPath string) (time.Duration, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var first, last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		isPairs := strings.Contains(line, " msg=pairs ")
		isTrial := strings.Contains(line, " msg=trial ")
		if !isPairs && !isTrial {
			continue
		}
		ts, _, ok := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", logPath, err)
		}
		if isPairs {
			first = at
		} else {
			last = at
		}
	}
	if first.IsZero() || last.Before(first) {
		return 0, fmt.Errorf("%s: no trial phase in the log", logPath)
	}
	return last.Sub(first), sc.Err()
}

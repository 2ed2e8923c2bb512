package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench/internal/heldir"
)

// SmokePrompt is the task of the smoke gate's zero-tool agent run. Any model
// can answer it; the scripted model knows it too.
const SmokePrompt = "pairbench smoke check: reply with the single word ready."

// smokePrefix names the smoke run's temporary directories.
const smokePrefix = "pairbench-smoke-"

// SmokeAgent runs the agent once with no tools on SmokePrompt, before any
// trial, and fails unless it answers, declares no tool but the harness tools
// its CLI always declares (PlanOptions.HarnessTools), and reports a cost
// above zero. That proves the model and its key, and that the spend cap can
// work: an agent prices a model it has no prices for at 0. It returns what
// the run cost, which counts in the run's budget. Its directory in dir is
// held while it runs (CleanStale removes a killed runner's).
func SmokeAgent(ctx context.Context, agent Agent, m rundir.Model, dir string, harness ...string) (float64, error) {
	work, hold, err := heldir.Make(dir, smokePrefix)
	if err != nil {
		return 0, err
	}
	defer func() {
		os.RemoveAll(work)
		hold.Close()
	}()
	res, err := agent.Run(ctx, AgentTask{
		Prompt: SmokePrompt, Model: m,
		Caps: Caps{Time: 2 * time.Minute, Turns: 3, SpendUSD: 0.5},
		Dir:  filepath.Join(work, "agent"), TranscriptPath: filepath.Join(work, "transcript.jsonl"),
	})
	switch {
	case err != nil:
		return res.Cost, fmt.Errorf("zero-tool agent run: %w", err)
	case res.StopReason == "error" || res.ErrorMessage != "":
		return res.Cost, fmt.Errorf("zero-tool agent run: the model failed: %s", orNone(res.ErrorMessage))
	case res.CapHit != "":
		return res.Cost, fmt.Errorf("zero-tool agent run hit its %s cap", res.CapHit)
	case strings.TrimSpace(res.Final) == "":
		return res.Cost, fmt.Errorf("zero-tool agent run gave no answer (stop reason %q)", res.StopReason)
	case len(beyond(res.Declared, harness)) > 0:
		return res.Cost, fmt.Errorf("zero-tool agent run declared tools %s; want none", strings.Join(beyond(res.Declared, harness), ", "))
	case res.CostMissing || !(res.Cost > 0):
		return res.Cost, fmt.Errorf("model %s reports no cost (%v), so the spend cap cannot work; give it prices", m, res.Cost)
	}
	return res.Cost, nil
}

// CleanStale removes the smoke runs' directories under root that no live
// runner holds.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	return heldir.Clean(root, cutoff, nil, smokePrefix+"*")
}

func orNone(s string) string {
	if s == "" {
		return "no message"
	}
	return s
}

// Budget is what a run may use in all: wall time and spend. Zero fields are
// no limit.
type Budget struct {
	Time     time.Duration
	SpendUSD float64
}

// SetupAllowance is the time a trial is assumed to take beyond its agent's
// time cap (browser, registration, sandbox, teardown) when checking a
// budget.
const SetupAllowance = 3 * time.Minute

// CheckBudget fails when the worst case of trials trials over slots slots,
// every one running to its caps, does not fit in b with spent (USD already
// spent: the smoke gate's, earlier runners') counted.
func CheckBudget(b Budget, trials, slots int, caps Caps, spent float64) error {
	if trials == 0 {
		return nil
	}
	if b.SpendUSD > 0 && caps.SpendUSD > 0 {
		if worst := float64(trials) * caps.SpendUSD; spent+worst > b.SpendUSD+1e-12 {
			if spent > 0 {
				return fmt.Errorf("budget: %d trials at up to $%.4f each may spend $%.4f, and $%.4f is spent already (the smoke gate, earlier runners): over the $%.4f budget",
					trials, caps.SpendUSD, worst, spent, b.SpendUSD)
			}
			return fmt.Errorf("budget: %d trials at up to $%.2f each may spend $%.2f, over the $%.2f budget", trials, caps.SpendUSD, worst, b.SpendUSD)
		}
	}
	if b.Time > 0 && caps.Time > 0 {
		rounds := int(math.Ceil(float64(trials) / float64(max(slots, 1))))
		if worst := time.Duration(rounds) * (caps.Time + SetupAllowance); worst > b.Time {
			return fmt.Errorf("budget: %d trials over %d slots may take %s at their caps, over the %s budget", trials, slots, worst, b.Time)
		}
	}
	return nil
}

// beyond returns the names of declared that are not in harness.
func beyond(declared, harness []string) []string {
	var out []string
	for _, d := range declared {
		if !slices.Contains(harness, d) {
			out = append(out, d)
		}
	}
	return out
}

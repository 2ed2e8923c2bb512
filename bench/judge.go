package bench

import (
	"context"
	"fmt"
	"os"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// DefaultJudgeCaps bound each judging of a judged trial unless the
// configuration says otherwise: 120 s and 0.10 USD.
var DefaultJudgeCaps = rundir.PlanCaps{TimeS: 120, SpendUSD: 0.10}

// JudgeSettings choose the judge of a run with judged intents
// (docs/registry.md, Open-ended intents).
type JudgeSettings struct {
	// Model is ScriptedModel or provider/id; "" is the agents' model.
	// ModelURL overrides its provider's endpoint.
	Model, ModelURL string
	// Caps bound each judging (time and spend; zero takes
	// DefaultJudgeCaps').
	Caps rundir.PlanCaps
	// Twice judges every judged answer a second time, for the report's
	// judge agreement.
	Twice bool
}

// planJudge is the judge the plan freezes when it has judged intents: the
// settings' model, else the agents' (m). Whether it can be reached is
// checked once the plan has judged intents (checkJudge).
func (s JudgeSettings) planJudge(m rundir.Model) (*rundir.PlanJudge, error) {
	if s.Model != "" {
		var err error
		if m, err = ParseModel(s.Model, s.ModelURL); err != nil {
			return nil, fmt.Errorf("--judge-model: %w", err)
		}
	}
	caps := s.Caps
	if caps.TimeS <= 0 {
		caps.TimeS = DefaultJudgeCaps.TimeS
	}
	if caps.SpendUSD <= 0 {
		caps.SpendUSD = DefaultJudgeCaps.SpendUSD
	}
	return &rundir.PlanJudge{Model: m, Prompt: runner.JudgePrompt, PromptVersion: runner.JudgePromptVersion,
		Caps: rundir.PlanCaps{TimeS: caps.TimeS, SpendUSD: caps.SpendUSD}, Twice: s.Twice}, nil
}

// checkJudge fails, in one line, when the plan's judge cannot be reached
// (an unknown provider without a base URL, a missing key).
func checkJudge(p *rundir.Plan) error {
	if p.Judge == nil {
		return nil
	}
	return launch.CheckJudge(p.Judge.Model, os.Environ())
}

// smokeJudge asks a run's judge once, about the first judged intent's
// known-correct answer (runner.SmokeJudge); its cost is the smoke gate's.
func (r *Run) smokeJudge(ctx context.Context) error {
	if r.plan.Judge == nil {
		return nil
	}
	for _, in := range r.plan.Intents {
		ti := r.trials.Intents[in.ID]
		if ti == nil || !ti.Intent.Judged() {
			continue
		}
		cost, err := runner.SmokeJudge(ctx, r.trials.Judge, r.plan.Judge, &ti.Intent)
		r.smokeCost += cost
		return err
	}
	return nil
}

package runner_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// TestAJudgedPlanHoldsItsJudgeInTheBudget: a plan with judged intents
// holds each trial against the budget at the agent's caps plus its
// judgings' (two with Twice), and a resume with another judge is a changed
// plan.
func TestAJudgedPlanHoldsItsJudgeInTheBudget(t *testing.T) {
	plan := &rundir.Plan{Caps: rundir.PlanCaps{TimeS: 60, Turns: 10, SpendUSD: 1},
		Intents: []rundir.PlannedIntent{{ID: "gift", Class: pairbench.AnswerJudged}}}
	assert.Equal(t, runner.CapsOf(plan.Caps), runner.BudgetCaps(plan), "no judge yet")
	plan.Judge = &rundir.PlanJudge{Model: rundir.Model{Provider: "openai", ID: "gpt-judge"}, Caps: rundir.PlanCaps{TimeS: 30, SpendUSD: 0.1}}
	assert.Equal(t, runner.Caps{Time: 90 * time.Second, Turns: 10, SpendUSD: 1.1}, runner.BudgetCaps(plan))
	plan.Judge.Twice = true
	c := runner.BudgetCaps(plan)
	assert.Equal(t, 120*time.Second, c.Time)
	assert.InDelta(t, 1.2, c.SpendUSD, 1e-12)

	err := runner.CheckBudget(runner.Budget{SpendUSD: 10}, 9, 1, runner.BudgetCaps(plan), 0)
	require.Error(t, err, "9 trials at $1.20 pass a $10 budget though their agents alone would not")
	assert.NoError(t, runner.CheckBudget(runner.Budget{SpendUSD: 10}, 9, 1, runner.CapsOf(plan.Caps), 0))

	other := *plan
	j := *plan.Judge
	j.Model.ID = "gpt-other"
	other.Judge = &j
	assert.Contains(t, plan.Changes(&other), "judge: openai/gpt-judge, prompt v0, caps 30s $0.1, twice → openai/gpt-other, prompt v0, caps 30s $0.1, twice")
}

// TestSmokeJudge: the smoke gate's judging of a judged intent's
// known-correct answer passes on a judge that gives a verdict, at its
// cost, and fails, saying why, on one that refuses or replies with no
// verdict.
func TestSmokeJudge(t *testing.T) {
	passAt := 0.5
	in := &intents.Intent{ID: "gift", Prompt: "Suggest a book.", Class: pairbench.AnswerJudged, PassAt: &passAt,
		Criteria: []intents.Criterion{{ID: "named", Weight: 1, Description: `Names "Paper Boats".`}},
		Baseline: intents.Baseline{Answer: map[string]any{"title": "Paper Boats"}}}
	scripted := httptest.NewServer(model.New(nil, model.Options{}))
	defer scripted.Close()
	pj := &rundir.PlanJudge{Model: rundir.Model{Provider: "pairbench", ID: model.ID, Scripted: true, InputPrice: 3, OutputPrice: 15},
		Prompt: runner.JudgePrompt, PromptVersion: runner.JudgePromptVersion, Caps: rundir.PlanCaps{TimeS: 60, SpendUSD: 0.1}}
	judge := launch.NewJudge(launch.JudgeConfig{ScriptedURL: scripted.URL + "/v1", TempRoot: t.TempDir()})
	cost, err := runner.SmokeJudge(t.Context(), judge, pj, in)
	require.NoError(t, err)
	assert.Positive(t, cost)

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error": {"message": "invalid api key"}}`, http.StatusUnauthorized)
	}))
	defer refusing.Close()
	judge = launch.NewJudge(launch.JudgeConfig{ScriptedURL: refusing.URL + "/v1", TempRoot: t.TempDir()})
	_, err = runner.SmokeJudge(t.Context(), judge, pj, in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "judge pairbench/pairbench-scripted: ")
	assert.Contains(t, err.Error(), "401 Unauthorized")

	chatty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices": [{"message": {"content": "Looks fine to me."}}], "usage": {"prompt_tokens": 10, "completion_tokens": 4}}`)
	}))
	defer chatty.Close()
	judge = launch.NewJudge(launch.JudgeConfig{ScriptedURL: chatty.URL + "/v1", TempRoot: t.TempDir()})
	cost, err = runner.SmokeJudge(t.Context(), judge, pj, in)
	assert.EqualError(t, err, `judge pairbench/pairbench-scripted on gift's known-correct answer: the judge's reply holds no verdict (a JSON object): "Looks fine to me."`)
	assert.Positive(t, cost, "what the reply cost is spent")
}

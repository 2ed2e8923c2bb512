package rundir

import (
	"fmt"

	"github.com/pairbench/pairbench"
)

// PlanJudge is the judge of a run with judged intents, frozen in run.json.
type PlanJudge struct {
	// Model is the judge's model: any the agents can use.
	Model Model `json:"model"`
	// Prompt is its system prompt (JudgePrompt), PromptVersion its version.
	Prompt        string `json:"prompt"`
	PromptVersion int    `json:"prompt_version"`
	// Caps bound each judging: its wait and its cost.
	Caps PlanCaps `json:"caps"`
	// Twice judges every judged answer a second time, to measure the
	// judge's agreement with itself (the report's judge agreement).
	Twice bool `json:"twice,omitempty"`
}

// Judged reports whether the plan has an intent of class judged.
func (p *Plan) Judged() bool {
	for _, in := range p.Intents {
		if in.Class == pairbench.AnswerJudged {
			return true
		}
	}
	return false
}

// TrialJudge is the judge's record of one trial: the question, the
// reply, and what was made of it (trials/<...>/judge.json).
const TrialJudge = "judge.json"

// String names the judge in a plan's changes: its model, prompt version,
// caps and whether it judges twice.
func (j *PlanJudge) String() string {
	if j == nil {
		return "none"
	}
	s := fmt.Sprintf("%s, prompt v%d, caps %gs $%g", j.Model, j.PromptVersion, j.Caps.TimeS, j.Caps.SpendUSD)
	if j.Twice {
		s += ", twice"
	}
	return s
}

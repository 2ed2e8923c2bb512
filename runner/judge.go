package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/rundir"
)

// JudgePromptVersion numbers JudgePrompt; run.json records both, and a
// change to the prompt is a new version.
const JudgePromptVersion = 1

// JudgePrompt is the judge's system prompt. The user message is a
// JudgeInput as JSON.
const JudgePrompt = `You are the judge of an open-ended task a web agent did on a website.
The user message is a JSON object: "task" is what the agent was asked, "criteria" what to score its answer on (each with an id, a weight and a description of what a full score needs), "answer" the answer the agent gave, and "final_page" the page the agent left (URL, title and visible text).
Score each criterion from 0 (not met at all) to 1 (fully met), from the answer and the page alone; you may give partial scores. Do not reward length or style the criteria do not ask for.
Reply with one JSON object and nothing else: {"scores": {"<criterion id>": <score>, ...}, "reasoning": "<one short sentence per criterion>"}.`

// JudgeInput is all a judge is shown of one trial: the task, the
// criteria, the extracted answer and the final page. It holds nothing of
// the arm: not the trial's name or directory, not the tools the page had,
// not the agent's words beyond its answer (which may say how it worked).
type JudgeInput struct {
	Task      string           `json:"task"`
	Criteria  []JudgeCriterion `json:"criteria"`
	Answer    map[string]any   `json:"answer"`
	FinalPage *JudgePage       `json:"final_page,omitempty"`
}

// JudgeCriterion is a criterion as the judge reads it.
type JudgeCriterion struct {
	ID          string  `json:"id"`
	Weight      float64 `json:"weight"`
	Description string  `json:"description"`
}

// JudgePage is the final page as the judge reads it.
type JudgePage struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
	Text  string `json:"text,omitempty"`
}

// NewJudgeInput is what the judge is shown of a trial of in that answered
// answer and left page (nil when not read).
func NewJudgeInput(in *intents.Intent, answer map[string]any, page *pairbench.PageState) JudgeInput {
	ji := JudgeInput{Task: in.Prompt, Answer: answer}
	for _, c := range in.Criteria {
		ji.Criteria = append(ji.Criteria, JudgeCriterion{ID: c.ID, Weight: c.Weight, Description: c.Description})
	}
	if page != nil {
		ji.FinalPage = &JudgePage{URL: page.URL, Title: page.Title, Text: page.Text}
	}
	return ji
}

// Message is the judge's user message: ji as indented JSON.
func (ji JudgeInput) Message() string {
	b, err := json.MarshalIndent(ji, "", "  ")
	if err != nil {
		// Answers are decoded JSON and the rest are strings and numbers.
		return fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	return string(b)
}

// Judge asks a judge model one question. Adapters live in agent/launch;
// they reach the model the way agents do.
type Judge interface {
	// Judge sends req and returns the model's reply. It returns an error
	// when the judge could not answer: down, refusing, too slow for the
	// request's time cap, or dearer than its spend cap.
	Judge(ctx context.Context, req JudgeRequest) (JudgeReply, error)
}

// JudgeRequest is one question to a judge.
type JudgeRequest struct {
	Model  rundir.Model
	System string
	User   string
	// Caps bound this one question: Time its wait, SpendUSD its cost.
	Caps Caps
}

// JudgeReply is a judge's reply and what it cost.
type JudgeReply struct {
	Text         string  `json:"text"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// BudgetCaps returns the caps a trial is held at against the run's budget:
// the agent's, and for a run with a judge, its judgings' spend and time
// beside.
func BudgetCaps(p *rundir.Plan) Caps {
	c := CapsOf(p.Caps)
	if p.Judge != nil && c.SpendUSD > 0 {
		n := 1.0
		if p.Judge.Twice {
			n = 2
		}
		j := CapsOf(p.Judge.Caps)
		c.SpendUSD += n * j.SpendUSD
		if c.Time > 0 {
			c.Time += time.Duration(n) * j.Time
		}
	}
	return c
}

// judgeRecord is judge.json.
type judgeRecord struct {
	Model         string       `json:"model"`
	PromptVersion int          `json:"prompt_version"`
	Input         JudgeInput   `json:"input"`
	Replies       []JudgeReply `json:"replies"`
	Error         string       `json:"error,omitempty"`
}

// ErrNoJudge is the judge step's error for a judged intent in a run
// without a judge.
var ErrNoJudge = errors.New("the intent is judged and the run has no judge")

// judge asks the run's judge about a trial of a judged intent whose answer
// passed its checks, schema and rules (g correct), and returns the grade
// it makes: correct at or above pass_at, else wrong. The judgement goes in
// the row. The error says why the judge could not judge (ErrNoJudge, or
// the judge's, wrapped: down, over a cap, an unreadable verdict): the
// trial then says nothing about the agent, and its pair runs again.
func (tr *trial) judge(ctx context.Context, page *pairbench.PageState, g grade.Result) (grade.Result, error) {
	t, in, row := tr.t, tr.in, &tr.row
	pj := t.Plan.Judge
	if pj == nil || t.Judge == nil {
		return g, ErrNoJudge
	}
	input := NewJudgeInput(&in.Intent, g.Extracted, page)
	rec := judgeRecord{Model: pj.Model.String(), PromptVersion: pj.PromptVersion, Input: input}
	defer func() { t.save(filepath.Join(tr.dir, rundir.TrialJudge), rec) }()
	req := JudgeRequest{Model: pj.Model, System: pj.Prompt, User: input.Message(), Caps: CapsOf(pj.Caps)}
	ask := func() (*pairbench.Judgement, error) {
		reply, err := t.Judge.Judge(ctx, req)
		if err != nil {
			if reply.CostUSD > 0 { // a reply over its cap: spent all the same
				rec.Replies = append(rec.Replies, reply)
			}
			return nil, err
		}
		rec.Replies = append(rec.Replies, reply)
		j, err := grade.ReadVerdict(reply.Text, in.Intent.Criteria, *in.Intent.PassAt)
		if j != nil {
			j.InputTokens, j.OutputTokens, j.CostUSD = reply.InputTokens, reply.OutputTokens, reply.CostUSD
		}
		return j, err
	}
	j, err := ask()
	if err == nil && pj.Twice {
		var again *pairbench.Judgement
		if again, err = ask(); err == nil {
			j.InputTokens += again.InputTokens
			j.OutputTokens += again.OutputTokens
			j.CostUSD += again.CostUSD
			again.InputTokens, again.OutputTokens, again.CostUSD = 0, 0, 0
			j.Again = again
		}
	}
	if err != nil {
		rec.Error = err.Error()
		// What the replies cost is spent, whatever became of them.
		if spent := spentOn(rec.Replies); spent.CostUSD > 0 {
			row.Judge = &spent
			row.Judge.PassAt = *in.Intent.PassAt
		}
		return g, fmt.Errorf("judge: %w", err)
	}
	row.Judge = j
	return grade.JudgedGrade(j, g), nil
}

// spentOn is what replies cost, as a judgement with no scores.
func spentOn(replies []JudgeReply) pairbench.Judgement {
	var j pairbench.Judgement
	for _, r := range replies {
		j.InputTokens += r.InputTokens
		j.OutputTokens += r.OutputTokens
		j.CostUSD += r.CostUSD
	}
	return j
}

// planJudge is the judge p freezes: j for a plan with judged intents, none
// otherwise. A plan with judged intents and no judge fails.
func planJudge(p *rundir.Plan, j *rundir.PlanJudge) (*rundir.PlanJudge, error) {
	if !p.Judged() {
		return nil, nil
	}
	if j == nil {
		return nil, errors.New("the plan has judged intents and no judge")
	}
	frozen := *j
	if frozen.Prompt == "" {
		frozen.Prompt, frozen.PromptVersion = JudgePrompt, JudgePromptVersion
	}
	return &frozen, nil
}

// SmokeJudge asks the plan's judge, before any pair, about the known-correct
// answer of in (a judged intent's baseline, without a page) and needs a
// verdict: a judge that is unreachable, refuses the key, is over its caps
// or does not reply with a score per criterion fails the smoke gate rather
// than every judged trial. It returns what the judging cost.
func SmokeJudge(ctx context.Context, judge Judge, pj *rundir.PlanJudge, in *intents.Intent) (float64, error) {
	input := NewJudgeInput(in, in.Baseline.Answer, nil)
	reply, err := judge.Judge(ctx, JudgeRequest{Model: pj.Model, System: pj.Prompt, User: input.Message(), Caps: CapsOf(pj.Caps)})
	if err != nil {
		return reply.CostUSD, fmt.Errorf("judge %s: %w", pj.Model, err)
	}
	if _, err := grade.ReadVerdict(reply.Text, in.Criteria, *in.PassAt); err != nil {
		return reply.CostUSD, fmt.Errorf("judge %s on %s's known-correct answer: %w", pj.Model, in.ID, err)
	}
	return reply.CostUSD, nil
}

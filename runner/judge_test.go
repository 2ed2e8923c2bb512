package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// judgeRequests records the judge's requests to the scripted model, and
// lets a test answer them itself.
type judgeRequests struct {
	mu     sync.Mutex
	bodies [][]byte
	auth   []string
	// answer, when set, answers the n-th judge request (from 1) instead of
	// the scripted judge, returning false to let it answer.
	answer func(n int, w http.ResponseWriter, r *http.Request) bool
}

func (j *judgeRequests) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`\"criteria\"`)) {
			next.ServeHTTP(w, r)
			return
		}
		j.mu.Lock()
		j.bodies = append(j.bodies, body)
		j.auth = append(j.auth, r.Header.Get("Authorization"))
		n := len(j.bodies)
		j.mu.Unlock()
		if j.answer != nil && j.answer(n, w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (j *judgeRequests) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.bodies)
}

// judged returns a copy of shared whose books-cheapest-by-author is an
// open-ended intent, scored by the scripted judge reached through an
// egress of its own, with the model behind jr.
func judged(t *testing.T, shared *stack, jr *judgeRequests, checks ...intents.Check) *stack {
	t.Helper()
	s := shared.trial(t, model.Options{})
	ti := s.trials.Intents["books-cheapest-by-author"]
	passAt := 0.8
	ti.Intent.Class, ti.Intent.PassAt, ti.Intent.Checks = pairbench.AnswerJudged, &passAt, checks
	ti.Intent.Criteria = []intents.Criterion{
		{ID: "title", Weight: 2, Description: `Names the cheapest book, "Paper Boats".`},
		{ID: "price", Weight: 1, Description: `Gives its price, "$7.49".`},
	}
	for i := range s.trials.Plan.Intents {
		s.trials.Plan.Intents[i].Class = pairbench.AnswerJudged
	}
	judge := s.trials.Plan.Model
	judge.BaseURL = ""
	s.trials.Plan.Judge = &rundir.PlanJudge{Model: judge, Prompt: runner.JudgePrompt, PromptVersion: runner.JudgePromptVersion,
		Caps: rundir.PlanCaps{TimeS: 120, SpendUSD: 0.1}}
	srv := httptest.NewServer(jr.wrap(model.New(intentsOf(s.trials.Intents), model.Options{})))
	t.Cleanup(srv.Close)
	s.trials.Plan.Model.BaseURL = srv.URL + "/v1"
	s.trials.Judge = launch.NewJudge(launch.JudgeConfig{ScriptedURL: srv.URL + "/v1", TempRoot: s.tmp})
	return s
}

// TestTheJudgeNeverLearnsTheArm: both arms of a judged intent are judged,
// each on a question that holds the task, the criteria, the extracted
// answer and the final page and nothing else: no arm, no tool, not the
// agent's words around its answer. The same answer gets the same scores.
func TestTheJudgeNeverLearnsTheArm(t *testing.T) {
	shared := newStack(t, []string{"books-cheapest-by-author"}, model.Options{})
	jr := &judgeRequests{}
	s := judged(t, shared, jr)
	rows := map[pairbench.Arm]pairbench.Row{}
	for _, arm := range pairbench.Arms {
		rows[arm] = s.run(t, "books-cheapest-by-author", arm)
		require.Equal(t, pairbench.Correct, rows[arm].Outcome, "%s: %s", arm, rows[arm].Reason)
		require.NotNil(t, rows[arm].Judge)
	}
	assert.Equal(t, rows[pairbench.Control].Judge.Scores, rows[pairbench.Treatment].Judge.Scores)
	assert.Equal(t, 1.0, rows[pairbench.Treatment].Judge.Score)

	require.Equal(t, 2, jr.count(), "one question per arm")
	var answers []any
	for i, body := range jr.bodies {
		assert.Equal(t, "Bearer "+launch.ScriptedKey, jr.auth[i])
		text := strings.ToLower(string(body))
		for _, leak := range []string{"control", "treatment", "find_books", "list_genre", "webmcp", "mcp__", "trials/", "i found the answer", "tool"} {
			assert.NotContains(t, text, leak, "the judge's request %d", i+1)
		}
		var req struct {
			Messages []struct{ Role, Content string }
		}
		require.NoError(t, json.Unmarshal(body, &req))
		require.Len(t, req.Messages, 2)
		assert.Equal(t, runner.JudgePrompt, req.Messages[0].Content)
		var in runner.JudgeInput
		dec := json.NewDecoder(strings.NewReader(req.Messages[1].Content))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&in), "the question holds a JudgeInput and nothing else")
		assert.Equal(t, "Paper Boats", in.Answer["title"])
		require.NotNil(t, in.FinalPage, "the judge sees the final page")
		answers = append(answers, in.Answer)
	}
	assert.Equal(t, answers[0], answers[1], "both arms' answers, as the judge saw them")
}

// TestHardChecksGateTheJudge: a trial that fails a check on its final
// page is wrong without the judge being asked.
func TestHardChecksGateTheJudge(t *testing.T) {
	shared := newStack(t, []string{"books-cheapest-by-author"}, model.Options{})
	jr := &judgeRequests{}
	s := judged(t, shared, jr, intents.Check{Selector: "h1", Text: "Books by"})
	row := s.run(t, "books-cheapest-by-author", pairbench.Treatment)
	assert.Equal(t, pairbench.Wrong, row.Outcome)
	assert.Contains(t, row.Reason, `page check h1 has text "Books by"`)
	assert.Nil(t, row.Judge)
	assert.Zero(t, jr.count(), "the judge was not asked")

	row = s.run(t, "books-cheapest-by-author", pairbench.Control)
	assert.Equal(t, pairbench.Correct, row.Outcome, row.Reason)
	assert.Equal(t, 1, jr.count(), "control passed the check and was judged")
}

// TestAJudgeThatCannotJudgeAbortsTheTrial: a judge that is down, too slow
// for its time cap, over its spend cap or unreadable aborts the trial,
// saying why (its pair runs again); what a reply cost is spent all the
// same.
func TestAJudgeThatCannotJudgeAbortsTheTrial(t *testing.T) {
	shared := newStack(t, []string{"books-cheapest-by-author"}, model.Options{})
	t.Run("down", func(t *testing.T) {
		jr := &judgeRequests{answer: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
			http.Error(w, `{"error": {"message": "judge overloaded"}}`, http.StatusServiceUnavailable)
			return true
		}}
		row := judged(t, shared, jr).run(t, "books-cheapest-by-author", pairbench.Treatment)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Contains(t, row.Reason, "judge: ")
		assert.Contains(t, row.Reason, "503 Service Unavailable")
		assert.Contains(t, row.Reason, "judge overloaded")
	})
	t.Run("time cap", func(t *testing.T) {
		jr := &judgeRequests{answer: func(_ int, _ http.ResponseWriter, r *http.Request) bool {
			<-r.Context().Done()
			return true
		}}
		s := judged(t, shared, jr)
		s.trials.Plan.Judge.Caps.TimeS = 2
		row := s.run(t, "books-cheapest-by-author", pairbench.Treatment)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Equal(t, "judge: no reply within its 2s time cap", row.Reason)
	})
	t.Run("spend cap", func(t *testing.T) {
		s := judged(t, shared, &judgeRequests{})
		s.trials.Plan.Judge.Caps.SpendUSD = 1e-6
		row := s.run(t, "books-cheapest-by-author", pairbench.Treatment)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Regexp(t, `^judge: its reply cost \$0\.\d{4}, over its \$0\.0000 spend cap$`, row.Reason)
		require.NotNil(t, row.Judge, "the reply's cost is kept")
		assert.Positive(t, row.Judge.CostUSD)
		assert.Greater(t, row.SpendUSD(), row.CostUSD)
	})
	t.Run("unreadable verdict", func(t *testing.T) {
		jr := &judgeRequests{answer: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices": [{"message": {"content": "{\"scores\": {\"title\": 1}}"}}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}`)
			return true
		}}
		row := judged(t, shared, jr).run(t, "books-cheapest-by-author", pairbench.Treatment)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Equal(t, "judge: the judge did not score criterion price", row.Reason)
	})
}

// TestAPairWhoseJudgeFailedRunsAgain: the executor reruns a pair whose
// trial the judge could not judge, and the rerun is judged.
func TestAPairWhoseJudgeFailedRunsAgain(t *testing.T) {
	shared := newStack(t, []string{"books-cheapest-by-author"}, model.Options{})
	var failed atomic.Bool
	jr := &judgeRequests{answer: func(n int, w http.ResponseWriter, _ *http.Request) bool {
		if n == 1 {
			failed.Store(true)
			http.Error(w, "judge down", http.StatusBadGateway)
			return true
		}
		return false
	}}
	s := judged(t, shared, jr)
	require.NoError(t, s.trials.RunDir.WritePlan(s.trials.Plan))
	ex := &runner.Execution{Dir: s.trials.RunDir, Plan: s.trials.Plan, Slots: 1, Trial: s.trials.Run}
	require.NoError(t, ex.Run(context.Background()))
	require.True(t, failed.Load())
	var rows []pairbench.Row
	read, err := s.trials.RunDir.ScanRows(rundir.RowQuery{File: rundir.RowsFile}, func(r *pairbench.Row) { rows = append(rows, *r) })
	require.NoError(t, err)
	assert.Empty(t, read.Warnings)
	require.Len(t, rows, 3, "the first trial aborted; its pair ran again whole")
	assert.Equal(t, pairbench.Aborted, rows[0].Outcome)
	assert.Contains(t, rows[0].Reason, "judge: ")
	for _, r := range rows[1:] {
		assert.Equal(t, 2, r.Attempt)
		assert.Equal(t, pairbench.Correct, r.Outcome, r.Reason)
		assert.NotNil(t, r.Judge)
	}
}

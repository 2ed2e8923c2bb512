package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/fulldisk"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// The trial's steps against fakes: a browser whose page is scripted and
// an agent that is a Go func. The same trial runs for real in
// trial_test.go (Chromium, pi in bubblewrap, the scripted model).

// agentFunc is an Agent that is a Go func.
type agentFunc func(ctx context.Context, task AgentTask) (AgentResult, error)

var _ Agent = agentFunc(nil)

func (f agentFunc) Run(ctx context.Context, task AgentTask) (AgentResult, error) { return f(ctx, task) }
func (f agentFunc) Version(context.Context) (string, error)                      { return "func", nil }

// openedBrowsers opens b every time, or fails with err.
type openedBrowsers struct {
	noProfiles
	b   Browser
	err error
}

func (o openedBrowsers) Open(context.Context, BrowserSpec) (Browser, error) {
	if o.err != nil {
		return nil, o.err
	}
	return o.b, nil
}

// pageBrowser is a scriptedBrowser whose registered tools go live on the
// start page, as they do in a browser, whose find_books answers, and whose
// final page can be read (or fails with err).
type pageBrowser struct {
	*scriptedBrowser
	page pairbench.PageState
	err  error
}

func (b *pageBrowser) Load(ctx context.Context, url string) (LoadInfo, error) {
	info, err := b.scriptedBrowser.Load(ctx, url)
	info.LoadedAt = time.Now()
	return info, err
}

func (b *pageBrowser) LiveTools(ctx context.Context) ([]webmcp.Tool, error) {
	live, _ := b.scriptedBrowser.LiveTools(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.registered {
		live = append(live, webmcp.Tool{Name: t.Name, Registered: true})
	}
	return live, nil
}

func (b *pageBrowser) PageState(context.Context, []string) (pairbench.PageState, error) {
	return b.page, b.err
}

func (b *pageBrowser) InvokeTool(_ context.Context, name string, _ json.RawMessage) (webmcp.Result, error) {
	return webmcp.Result{Text: `{"title":"Paper Boats","price":"$7.49"}`, Registered: true}, nil
}

// blindNativeBrowser is a pageBrowser with the browser's own WebMCP, which
// saw none of the calls the webmcp tool made through it.
type blindNativeBrowser struct{ *pageBrowser }

func (blindNativeBrowser) NativeWebMCP(context.Context) (bool, error)    { return true, nil }
func (blindNativeBrowser) BrowserCalls() ([]pairbench.BrowserCall, bool) { return nil, true }

// stepsTrials returns Trials of books-cheapest-by-author over b and agent,
// in a fresh run directory.
func stepsTrials(t *testing.T, b Browser, agent Agent) *Trials {
	t.Helper()
	reg := loadExamples(t)
	plan, _, err := NewPlan(reg, planOpts("books-cheapest-by-author"))
	require.NoError(t, err)
	tis, err := TrialIntents(reg, plan)
	require.NoError(t, err)
	return &Trials{RunDir: rundir.RunDir{Path: t.TempDir()}, Plan: plan, Intents: tis,
		Browsers: openedBrowsers{b: b}, Agent: agent, SetupAttempts: 1,
		BrowserMCP: func(url string) MCPServer { return MCPServer{Name: "browser", URL: url} }}
}

// books is the books intent's start page.
func books() *pageBrowser {
	return &pageBrowser{scriptedBrowser: &scriptedBrowser{}, page: pairbench.PageState{URL: "http://books.example/", Title: "Books"}}
}

// answers is an agent that answers with answer after a turn, as the
// scripted model would.
func answers(answer string) agentFunc {
	return func(_ context.Context, task AgentTask) (AgentResult, error) {
		if task.Started != nil {
			task.Started()
		}
		if err := os.WriteFile(task.TranscriptPath, []byte("{}\n"), 0o644); err != nil {
			return AgentResult{}, fmt.Errorf("transcript: %w", err)
		}
		return AgentResult{Final: answer, StopReason: "stop", Turns: 1, InputTokens: 10, OutputTokens: 5, Cost: 0.001,
			Declared: task.Allowlist, TranscriptTimes: []time.Time{time.Now()}}, nil
	}
}

const rightAnswer = "```json\n{\"title\": \"Paper Boats\", \"price\": \"$7.49\"}\n```"

// stepRun is a trial run step by step, as Run takes it: the step's error
// before Run makes it the trial's end, and Run's.
type stepRun struct {
	row          pairbench.Row
	stepErr, err error
}

func runSteps(t *testing.T, trials *Trials, ctx context.Context, arm pairbench.Arm) stepRun {
	t.Helper()
	job := rundir.Job{Intent: "books-cheapest-by-author", Domain: "books.example", Stage: pairbench.StagePair, Order: pairbench.AB, Attempt: 1}
	tr, err := trials.newTrial(TrialSpec{Job: job, Arm: arm, Dir: rundir.TrialDir(job, arm)})
	require.NoError(t, err)
	stepErr := tr.run(ctx)
	err = tr.settle(ctx, stepErr)
	return stepRun{row: tr.row, stepErr: stepErr, err: err}
}

func TestTrialStepsEndAsOutcomes(t *testing.T) {
	judged := func(trials *Trials, j Judge) {
		in := trials.Intents["books-cheapest-by-author"]
		passAt := 0.8
		in.Intent.Class, in.Intent.PassAt = pairbench.AnswerJudged, &passAt
		in.Intent.Criteria = []intents.Criterion{{ID: "title", Weight: 1, Description: "Names the book."}}
		trials.Plan.Judge = &rundir.PlanJudge{Model: trials.Plan.Model, Prompt: JudgePrompt, PromptVersion: JudgePromptVersion}
		trials.Judge = j
	}
	checked := func(trials *Trials) {
		in := trials.Intents["books-cheapest-by-author"]
		in.Intent.Checks = []intents.Check{{Selector: "h1", Text: "Books"}}
	}
	for _, c := range []struct {
		name   string
		arm    pairbench.Arm
		browse Browser
		agent  Agent
		edit   func(*Trials)
		step   TrialStep
		reason string
		check  func(t *testing.T, r stepRun, trials *Trials)
	}{{
		name: "the trial directory cannot be made", arm: pairbench.Control, browse: books(), agent: answers(rightAnswer),
		edit: func(trials *Trials) {
			file := filepath.Join(trials.RunDir.Path, "trials")
			require.NoError(t, os.WriteFile(file, nil, 0o644))
		},
		step: TrialDirStep, reason: "runner error: ",
		check: func(t *testing.T, r stepRun, _ *Trials) { assert.ErrorIs(t, r.stepErr, syscall.ENOTDIR) },
	}, {
		name: "no browser opens", arm: pairbench.Control, agent: answers(rightAnswer),
		edit: func(trials *Trials) { trials.Browsers = openedBrowsers{err: errors.New("no chromium today")} },
		step: SetupStep, reason: "setup: open: no chromium today",
		check: func(t *testing.T, r stepRun, trials *Trials) {
			var se *SetupError
			require.ErrorAs(t, r.stepErr, &se)
			assert.Equal(t, []string{"open: no chromium today"}, se.Failures)
			assert.FileExists(t, filepath.Join(trials.RunDir.File(r.row.TrialDir), rundir.TrialSetup), "the failures are kept")
		},
	}, {
		name: "the entry tool did not register", arm: pairbench.Treatment, agent: answers(rightAnswer),
		browse: &pageBrowser{scriptedBrowser: &scriptedBrowser{
			failed: []pairbench.RegistrationFailure{{Tool: "find_books", URL: "http://books.example/", Error: "SyntaxError"}}}},
		step: SetupStep, reason: "setup: tool find_books",
		check: func(t *testing.T, r stepRun, _ *Trials) {
			require.Len(t, r.row.Unregistered, 1)
			assert.Equal(t, "find_books", r.row.Unregistered[0].Tool)
		},
	}, {
		name: "the agent cannot run", arm: pairbench.Control, browse: books(),
		agent: agentFunc(func(context.Context, AgentTask) (AgentResult, error) { return AgentResult{}, errors.New("no node") }),
		step:  AgentStep, reason: "agent: no node",
		check: func(t *testing.T, r stepRun, _ *Trials) {
			assert.Equal(t, "no node", r.row.Error, "the row's error is the agent's own")
		},
	}, {
		name: "the browser saw fewer calls than the webmcp tool", arm: pairbench.Treatment,
		browse: blindNativeBrowser{books()}, agent: invokes("find_books", answers(rightAnswer)),
		step: BrowserCallsStep, reason: "harness error: tool calls the browser's WebMCP did not see: find_books",
		check: func(t *testing.T, r stepRun, _ *Trials) {
			assert.True(t, r.row.Adopted)
			assert.Zero(t, r.row.Turns, "what the agent reported is not recorded")
		},
	}, {
		name: "the final page cannot be read", arm: pairbench.Control,
		browse: &pageBrowser{scriptedBrowser: &scriptedBrowser{}, err: errors.New("tab crashed")},
		agent:  answers(rightAnswer), edit: checked,
		step: FinalPageStep, reason: "final page: tab crashed",
	}, {
		name: "a judged intent in a run without a judge", arm: pairbench.Control, browse: books(),
		agent: answers(rightAnswer), edit: func(trials *Trials) { judged(trials, nil) },
		step: JudgeStep, reason: ErrNoJudge.Error(),
		check: func(t *testing.T, r stepRun, _ *Trials) { assert.ErrorIs(t, r.stepErr, ErrNoJudge) },
	}, {
		name: "the judge cannot judge", arm: pairbench.Control, browse: books(), agent: answers(rightAnswer),
		edit: func(trials *Trials) {
			judged(trials, judgeFunc(func(context.Context, JudgeRequest) (JudgeReply, error) {
				return JudgeReply{CostUSD: 0.002}, errors.New("over its spend cap")
			}))
		},
		step: JudgeStep, reason: "judge: over its spend cap",
		check: func(t *testing.T, r stepRun, trials *Trials) {
			require.NotNil(t, r.row.Judge, "what the judging cost is in the row")
			assert.Equal(t, 0.002, r.row.Judge.CostUSD)
			assert.FileExists(t, filepath.Join(trials.RunDir.File(r.row.TrialDir), rundir.TrialJudge))
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			trials := stepsTrials(t, c.browse, c.agent)
			if c.edit != nil {
				c.edit(trials)
			}
			r := runSteps(t, trials, context.Background(), c.arm)
			require.NoError(t, r.err, "an aborted trial is the trial's outcome, not Run's error")
			var te *TrialError
			require.ErrorAs(t, r.stepErr, &te)
			assert.Equal(t, c.step, te.Step)
			assert.Equal(t, pairbench.Aborted, r.row.Outcome)
			assert.Equal(t, te.Error(), r.row.Reason, "the row's reason is the step's error")
			assert.Contains(t, r.row.Reason, c.reason)
			assert.NoError(t, r.row.Validate())
			if c.check != nil {
				c.check(t, r, trials)
			}
		})
	}
}

// judgeFunc is a Judge that is a Go func.
type judgeFunc func(ctx context.Context, req JudgeRequest) (JudgeReply, error)

func (f judgeFunc) Judge(ctx context.Context, req JudgeRequest) (JudgeReply, error) {
	return f(ctx, req)
}

// invokes is then after it invoked tool through the trial's webmcp server,
// as an agent does.
func invokes(tool string, then agentFunc) agentFunc {
	return func(ctx context.Context, task AgentTask) (AgentResult, error) {
		var url string
		for _, s := range task.MCPServers {
			if s.Name == webmcp.ServerName {
				url = s.URL
			}
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "fake-agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
		if err != nil {
			return AgentResult{}, err
		}
		defer cs.Close()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: webmcp.ToolName,
			Arguments: map[string]any{"action": "invoke", "tool": tool, "arguments": map[string]any{"author": "Ada Quill"}}}); err != nil {
			return AgentResult{}, err
		}
		return then(ctx, task)
	}
}

func TestTrialStepsToACorrectAnswer(t *testing.T) {
	for _, arm := range pairbench.Arms {
		t.Run(string(arm), func(t *testing.T) {
			agent := answers(rightAnswer)
			if arm == pairbench.Treatment {
				agent = invokes("find_books", agent)
			}
			trials := stepsTrials(t, books(), agent)
			r := runSteps(t, trials, context.Background(), arm)
			require.NoError(t, r.stepErr)
			require.NoError(t, r.err)
			assert.Equal(t, pairbench.Correct, r.row.Outcome, r.row.Reason)
			assert.Equal(t, arm == pairbench.Treatment, r.row.Adopted)
			assert.Equal(t, 1, r.row.Turns)
			assert.NoError(t, r.row.Validate())
			dir := trials.RunDir.File(r.row.TrialDir)
			for _, f := range []string{rundir.TrialSetup, rundir.TrialTimeline, rundir.TrialWebMCP, rundir.TrialTranscript} {
				assert.FileExists(t, filepath.Join(dir, f))
			}
			assert.NoDirExists(t, filepath.Join(dir, "agent"), "the agent's own directory is removed")
		})
	}
}

// TestTrialStepsInterrupted: a trial whose context ends is no outcome.
func TestTrialStepsInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	trials := stepsTrials(t, books(), agentFunc(func(ctx context.Context, task AgentTask) (AgentResult, error) {
		cancel()
		return AgentResult{}, ctx.Err()
	}))
	r := runSteps(t, trials, ctx, pairbench.Control)
	assert.ErrorIs(t, r.err, ErrInterrupted)
	assert.NotErrorIs(t, r.err, ErrDiskFull)
	assert.Empty(t, r.row.Outcome)
}

// TestAFullDiskStopsTheRun: a step that meets a full disk (ENOSPC, as the
// system says it, whatever the words around it) stops the run with
// ErrDiskFull and the step's *TrialError, and writes no row; so does a
// row that cannot be appended. On a real full disk, and on an agent that
// reports one.
func TestAFullDiskStopsTheRun(t *testing.T) {
	plan := func(trials *Trials) *Execution {
		trials.Plan.Intents = trials.Plan.Intents[:1]
		trials.Plan.Intents[0].Pairs = trials.Plan.Intents[0].Pairs[:1]
		return &Execution{Dir: trials.RunDir, Plan: trials.Plan, Slots: 1, Trial: trials.Run}
	}
	t.Run("an agent that says so", func(t *testing.T) {
		trials := stepsTrials(t, books(), agentFunc(func(context.Context, AgentTask) (AgentResult, error) {
			return AgentResult{}, fmt.Errorf("pi: transcript: %w", &fs.PathError{Op: "write", Path: "transcript.jsonl", Err: syscall.ENOSPC})
		}))
		r := runSteps(t, trials, context.Background(), pairbench.Control)
		require.ErrorIs(t, r.err, ErrDiskFull)
		var te *TrialError
		require.ErrorAs(t, r.err, &te)
		assert.Equal(t, AgentStep, te.Step)
		assert.ErrorIs(t, r.err, syscall.ENOSPC)
		assert.Contains(t, r.err.Error(), "no space left for the run: agent: pi: transcript: write transcript.jsonl: no space left on device")
		assert.Empty(t, r.row.Outcome, "no outcome")

		ex := plan(trials)
		require.ErrorIs(t, ex.Run(context.Background()), ErrDiskFull)
		assert.Empty(t, rowsOf(t, ex.Dir, rundir.RowsFile), "no row is written")
	})
	t.Run("a full run directory", func(t *testing.T) {
		var full bool
		trials := stepsTrials(t, books(), answers(rightAnswer))
		trials.RunDir = rundir.RunDir{Path: fulldisk.Mount(t, 1<<20)}
		ex := plan(trials)
		ex.OnRow = func(pairbench.Row) {
			if !full {
				full = true
				fulldisk.Fill(t, trials.RunDir.Path)
			}
		}
		err := ex.Run(context.Background())
		require.ErrorIs(t, err, ErrDiskFull)
		assert.ErrorIs(t, err, syscall.ENOSPC)
		var te *TrialError
		require.ErrorAs(t, err, &te)
		t.Logf("the step that met the full disk: %s: %v", te.Step, err)
		rows := rowsOf(t, ex.Dir, rundir.RowsFile)
		require.Len(t, rows, 1, "the row before the disk filled, whole")
		assert.Equal(t, pairbench.Correct, rows[0].Outcome)
	})
	t.Run("a row that cannot be appended", func(t *testing.T) {
		dir := rundir.RunDir{Path: fulldisk.Mount(t, 1<<20)}
		ex := &Execution{Dir: dir, Plan: execPlan(map[string]int{"a": 1}, map[string]string{"a": "d"}), Slots: 1,
			Trial:      (&fakeTrials{}).trial,
			OnTrialEnd: func(TrialSpec, pairbench.Row) { fulldisk.Fill(t, dir.Path) }}
		err := ex.Run(context.Background())
		require.ErrorIs(t, err, ErrDiskFull)
		var te *TrialError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, RowStep, te.Step)
		assert.ErrorIs(t, err, syscall.ENOSPC)
		assert.Empty(t, rowsOf(t, dir, rundir.RowsFile), "no torn row")
	})
}

// TestAnAbortedStepIsTheRowWritten: Execution writes the row of a trial
// whose step failed, its reason the step's error.
func TestAnAbortedStepIsTheRowWritten(t *testing.T) {
	trials := stepsTrials(t, books(), agentFunc(func(context.Context, AgentTask) (AgentResult, error) {
		return AgentResult{}, errors.New("no node")
	}))
	trials.Plan.Intents = trials.Plan.Intents[:1]
	trials.Plan.Intents[0].Pairs = trials.Plan.Intents[0].Pairs[:1]
	ex := &Execution{Dir: trials.RunDir, Plan: trials.Plan, Slots: 1, Trial: trials.Run, PairAttempts: 1}
	require.NoError(t, ex.Run(context.Background()))
	rows := rowsOf(t, ex.Dir, rundir.RowsFile)
	require.Len(t, rows, 1, "the pair's first trial, given up after its one attempt")
	assert.Equal(t, pairbench.Aborted, rows[0].Outcome)
	assert.Equal(t, "agent: no node", rows[0].Reason)
	assert.Equal(t, "no node", rows[0].Error)
}

package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/pairbench/pairbench/state"
)

// RunID names one bench run; it is also the run's directory in the
// artifact store. The bot makes it as pr<N>-<head sha>-<8 hex digits>, so a
// run id alone says which pull request and commit it benches.
type RunID string

var runIDPattern = regexp.MustCompile(`^pr([0-9]{1,9})-([0-9a-f]{40})-[0-9a-f]{8}$`)

// newRunID makes a fresh run id for a bench of sha on pull request pr.
func newRunID(pr int, sha string) RunID {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return RunID(fmt.Sprintf("pr%d-%s-%s", pr, strings.ToLower(sha), hex.EncodeToString(b[:])))
}

// parseRunID returns the pull request and head SHA a run id names.
func parseRunID(id RunID) (pr int, sha string, ok bool) {
	m := runIDPattern.FindStringSubmatch(string(id))
	if m == nil {
		return 0, "", false
	}
	pr, err := strconv.Atoi(m[1])
	return pr, m[2], err == nil
}

// Repo names a repository and the app installation that reaches it.
type Repo struct {
	Owner, Name   string
	DefaultBranch string
	// Installation is the GitHub App installation id; 0 with a plain token.
	Installation int64
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Request is one bench as the backend sees it: what a Runner runs, what
// a workflow_dispatch carries.
type Request struct {
	RunID   RunID
	Repo    Repo
	PR      int
	HeadSHA string // the commit benched; the registry is read at this SHA
	// Domains are the domains to bench, sorted.
	Domains []string
	// Intents are the intent ids to bench; empty means every intent of
	// Domains.
	Intents []string
	// Pairs is the number of pairs per intent; 0 means the backend's default.
	Pairs int
	// Model names the agent's model; "" means the backend's default.
	Model string
	// Agent names the agent benched; "" means the backend's default.
	Agent string
	// Base is the pull request's base commit when the bench benches as the
	// pull request's changes choose: each of Domains (Intents empty) or
	// each named intent's domain as config.Comparisons chooses, head's
	// tools against Base's where they changed. "" benches Domains or
	// Intents against no tools (a bench recorded before bases were, or a
	// /bench run --against none).
	Base string
	// TopUp counts the times /bench more topped the run up: 0 for the
	// run's first bench; n > 0 asks the backend to resume run RunID from
	// the artifact store with Pairs per intent, more than it had, never to
	// plan it afresh.
	TopUp int
}

// Limits of workflow_dispatch.
const (
	maxWorkflowInputs     = 25
	maxWorkflowInputChars = 65535
)

// ErrInputsTooLarge is returned (wrapped) by Actions.Dispatch when a
// request does not fit in workflow_dispatch's inputs.
var ErrInputsTooLarge = errors.New("bench request does not fit in workflow_dispatch inputs")

// DefaultWorkflow is the workflow file the Actions backend dispatches by
// default. The workflow must declare the inputs run_id, pr, head_sha,
// domains, intents, pairs and model, agent to take /bench run --agent
// and top_up to take /bench more (each sent only then), and name its runs
// as WorkflowTitle does; it runs on the registry's default
// branch, never on the pull request's, so the workflow that runs is always
// one a maintainer merged.
const DefaultWorkflow = "pairbench.yml"

// WorkflowInputs returns the workflow_dispatch inputs for req, or an error
// wrapping ErrInputsTooLarge when they exceed GitHub's limits (25 inputs,
// 65,535 characters in all).
func WorkflowInputs(req Request) (map[string]any, error) {
	in := map[string]any{
		"run_id":   string(req.RunID),
		"pr":       strconv.Itoa(req.PR),
		"head_sha": req.HeadSHA,
		"domains":  strings.Join(req.Domains, ","),
		"intents":  strings.Join(req.Intents, ","),
	}
	if req.Pairs > 0 {
		in["pairs"] = strconv.Itoa(req.Pairs)
	}
	if req.Model != "" {
		in["model"] = req.Model
	}
	if req.Base != "" {
		// Sent only for a bench as the pull request's changes choose: the
		// Action benches them since base (pairbench run --changes BASE,
		// with --intent for named intents).
		in["base"] = req.Base
	}
	if req.Agent != "" {
		// Sent only when asked for, so a workflow that declares no agent
		// input still takes every other bench.
		in["agent"] = req.Agent
	}
	if req.TopUp > 0 {
		// Sent only for /bench more: the workflow resumes run_id from the
		// store with pairs per intent (the Action's resume input) and
		// names its run for this top-up (WorkflowTitle).
		in["top_up"] = strconv.Itoa(req.TopUp)
	}
	n := 0
	for k, v := range in {
		n += len(k) + len(v.(string))
	}
	if len(in) > maxWorkflowInputs || n > maxWorkflowInputChars {
		return nil, fmt.Errorf("%w: %d inputs, %d characters", ErrInputsTooLarge, len(in), n)
	}
	return in, nil
}

// workDispatch starts a bench on GitHub Actions: a workflow_dispatch on the
// default branch, asking GitHub for the run's id, which it records; only
// that run's workflow_run event may end the bench. A retry first looks for
// the run among the workflow's dispatched runs (by its title), so a crash
// after dispatching does not dispatch twice. A server that does not answer
// with the run (an older GitHub Enterprise Server) has the run looked up
// the same way until it appears.
func (b *Bot) workDispatch(ctx context.Context, job *river.Job[dispatchJob]) error {
	var bn state.Bench
	var found bool
	if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
		bn, found, err = tx.Bench(ctx, job.Args.Run)
		return err
	}); err != nil {
		return err
	}
	if !found || bn.Over() || bn.WorkflowRunID != 0 {
		return nil
	}
	req := request(bn)
	c, err := b.cfg.Clients.Client(ctx, bn.Installation)
	if err != nil {
		return err
	}
	var run *github.WorkflowRun
	if job.Attempt > 1 || !bn.Dispatched.IsZero() {
		if run, err = b.findRun(ctx, c, req); err != nil {
			return err
		}
	}
	if run == nil && bn.Dispatched.IsZero() {
		if problems, err := b.checkRegistry(ctx, c, req, job.Attempt); err != nil {
			return err
		} else if problems != nil {
			b.cfg.Metrics.Dispatched(BackendActions, "invalid_registry")
			return b.state.Update(ctx, func(tx *state.Tx) error {
				return endBench(ctx, tx, bn.Run, state.BenchFailed, failureReason("The bench was not started: ", problems), "")
			})
		}
		id, url, err := b.dispatch(ctx, c, req)
		var permanent *dispatchRefused
		if errors.As(err, &permanent) {
			b.cfg.Metrics.Dispatched(BackendActions, "refused")
			return b.state.Update(ctx, func(tx *state.Tx) error {
				return endBench(ctx, tx, bn.Run, state.BenchFailed, "The bench could not be started: "+permanent.Error(), "")
			})
		}
		if err != nil {
			return err
		}
		b.cfg.Metrics.Dispatched(BackendActions, "ok")
		if id != 0 {
			run = &github.WorkflowRun{ID: &id, HTMLURL: &url}
		}
	}
	return b.state.Update(ctx, func(tx *state.Tx) error {
		cur, _, err := tx.LockBench(ctx, bn.Run)
		if err != nil {
			return err
		}
		if cur.WorkflowRunID != 0 {
			// The run's workflow_run delivery came first and recorded it
			// (see workflowRun): the bench is the delivery's to end. A run
			// of ours other than that one is a second dispatch of the bench
			// (a lost answer, a lagging run listing): it is stopped.
			if run != nil && run.GetID() != cur.WorkflowRunID {
				b.log.Warn("dispatch found another run than the one recorded: cancelling it", "run", cur.Run,
					"recorded", cur.WorkflowRunID, "found", run.GetID())
				return cancelDuplicate(ctx, tx, cur, run.GetID())
			}
			return nil
		}
		if run == nil {
			if cur.Dispatched.IsZero() {
				cur.Dispatched = tx.Now()
			}
			if err := tx.SaveBench(ctx, cur); err != nil {
				return err
			}
			return river.JobSnooze(5 * time.Second)
		}
		if err := recordRun(ctx, tx, cur, run.GetID(), run.GetHTMLURL()); err != nil {
			return err
		}
		if run.GetStatus() == "completed" {
			return finishFromWorkflow(ctx, tx, cur, run.GetConclusion(), run.GetHTMLURL())
		}
		return nil
	})
}

// recordRun records Actions run id (at url) as the run of bench cur, which
// the transaction has locked, and queues what follows: the check run shows
// the bench running, or, for a bench cancelled while it was being
// dispatched, the new run is stopped too. The caller ends the bench if the
// run completed.
func recordRun(ctx context.Context, tx *state.Tx, cur state.Bench, id int64, url string) error {
	if cur.Dispatched.IsZero() {
		cur.Dispatched = tx.Now()
	}
	cur.WorkflowRunID, cur.WorkflowRunURL = id, url
	if cur.Over() {
		if err := tx.SaveBench(ctx, cur); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, cancelJob{Run: cur.Run}, nil)
		return err
	}
	cur.State = state.BenchRunning
	cur.CheckVersion++
	if err := tx.SaveBench(ctx, cur); err != nil {
		return err
	}
	_, err := tx.Enqueue(ctx, checkJob{Run: cur.Run, Version: cur.CheckVersion}, pendingOnce)
	return err
}

// checkRegistry checks req's registry at its head commit with
// Config.CheckRegistry, if set, and returns what is wrong with it (nil for
// a registry without problems). It returns an error only for a read of the
// API that failed and may succeed if tried again; from the third attempt on,
// or for a registry the API cannot give whole, it dispatches unchecked.
func (b *Bot) checkRegistry(ctx context.Context, c *github.Client, req Request, attempt int) (problems, err error) {
	if b.cfg.CheckRegistry == nil {
		return nil, nil
	}
	tree := newContentsFS(ctx, registryAt{c: c, owner: req.Repo.Owner, repo: req.Repo.Name, sha: req.HeadSHA})
	problems = b.cfg.CheckRegistry(tree, req.HeadSHA)
	switch {
	case tree.err == nil:
		return problems, nil
	case attempt < 3 && !errors.Is(tree.err, errUncheckable):
		return nil, tree.err
	}
	b.log.Warn("registry not checked before the dispatch; the workflow's run checks it", "run", req.RunID, "err", tree.err)
	return nil, nil
}

// dispatchRefused is a dispatch GitHub will never accept as it stands (no
// such workflow, inputs it refuses, inputs too large).
type dispatchRefused struct{ err error }

func (e *dispatchRefused) Error() string { return e.err.Error() }
func (e *dispatchRefused) Unwrap() error { return e.err }

// dispatch sends the workflow_dispatch event and returns the run's id and
// address when GitHub gives them.
func (b *Bot) dispatch(ctx context.Context, c *github.Client, req Request) (int64, string, error) {
	inputs, err := WorkflowInputs(req)
	if err != nil {
		return 0, "", &dispatchRefused{err}
	}
	u := fmt.Sprintf("repos/%s/%s/actions/workflows/%s/dispatches", url.PathEscape(req.Repo.Owner), url.PathEscape(req.Repo.Name), url.PathEscape(b.cfg.Workflow))
	// go-github v66 predates return_run_details.
	hr, err := c.NewRequest(http.MethodPost, u, map[string]any{"ref": req.Repo.DefaultBranch, "inputs": inputs, "return_run_details": true})
	if err != nil {
		return 0, "", err
	}
	var out struct {
		ID      int64  `json:"workflow_run_id"`
		HTMLURL string `json:"html_url"`
	}
	_, err = c.Do(ctx, hr, &out)
	var e *github.ErrorResponse
	if _, withBase := inputs["base"]; withBase && errors.As(err, &e) && e.Response != nil &&
		e.Response.StatusCode == http.StatusUnprocessableEntity && strings.Contains(e.Message, "Unexpected inputs provided") && strings.Contains(e.Message, `"base"`) {
		// A workflow made before the base input: the bench runs as it did
		// then, against no tools, and the operator is told how to change it.
		b.log.Warn("the workflow declares no base input: the pull request is benched against no tools; add the input (docs/github-app.md)",
			"workflow", b.cfg.Workflow, "repo", req.Repo.FullName(), "run", req.RunID)
		req.Base = ""
		return b.dispatch(ctx, c, req)
	}
	if _, topUp := inputs["top_up"]; topUp && errors.As(err, &e) && e.Response != nil &&
		e.Response.StatusCode == http.StatusUnprocessableEntity && strings.Contains(e.Message, "Unexpected inputs provided") && strings.Contains(e.Message, `"top_up"`) {
		// A workflow made before /bench more took the Actions backend: it
		// would bench the run afresh, so the top-up is not dispatched.
		return 0, "", &dispatchRefused{fmt.Errorf("%s on %s@%s declares no top_up input, which `/bench more` needs to resume the run (docs/github-app.md, The Actions backend)",
			b.cfg.Workflow, req.Repo.FullName(), req.Repo.DefaultBranch)}
	}
	if errors.As(err, &e) && e.Response != nil && (e.Response.StatusCode == http.StatusNotFound || e.Response.StatusCode == http.StatusUnprocessableEntity) {
		return 0, "", &dispatchRefused{fmt.Errorf("dispatch %s on %s@%s: %w", b.cfg.Workflow, req.Repo.FullName(), req.Repo.DefaultBranch, err)}
	}
	if err != nil {
		return 0, "", fmt.Errorf("dispatch %s on %s@%s: %w", b.cfg.Workflow, req.Repo.FullName(), req.Repo.DefaultBranch, err)
	}
	return out.ID, out.HTMLURL, nil
}

// findRun looks for req's run among the workflow's dispatched runs, by
// its title; nil if it is not listed (yet). Only people with write access
// can dispatch, so a dispatched run's title is not a fork's to choose.
func (b *Bot) findRun(ctx context.Context, c *github.Client, req Request) (*github.WorkflowRun, error) {
	opts := &github.ListWorkflowRunsOptions{Event: "workflow_dispatch", ListOptions: github.ListOptions{PerPage: 100}}
	runs, _, err := c.Actions.ListWorkflowRunsByFileName(ctx, req.Repo.Owner, req.Repo.Name, b.cfg.Workflow, opts)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", b.cfg.Workflow, err)
	}
	for _, r := range runs.WorkflowRuns {
		if id, topUp, ok := runIDFromTitle(r.GetDisplayTitle()); ok && id == req.RunID && topUp == req.TopUp && r.GetEvent() == "workflow_dispatch" {
			return r, nil
		}
	}
	return nil, nil
}

// workCancel stops a cancelled bench on its backend: the local bench's job,
// or the Actions run recorded at dispatch (a run dispatched after the
// cancel is stopped by workDispatch).
func (b *Bot) workCancel(ctx context.Context, job *river.Job[cancelJob]) error {
	var bn state.Bench
	var found bool
	if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
		bn, found, err = tx.Bench(ctx, job.Args.Run)
		return err
	}); err != nil || !found {
		return err
	}
	if bn.Backend == BackendLocal {
		if bn.JobID == 0 {
			return nil
		}
		return b.state.CancelJob(ctx, bn.JobID)
	}
	if bn.WorkflowRunID == 0 {
		return nil
	}
	c, err := b.cfg.Clients.Client(ctx, bn.Installation)
	if err != nil {
		return err
	}
	return cancelWorkflowRun(ctx, c, bn.Repo, bn.WorkflowRunID)
}

// cancelDuplicate queues the cancellation of Actions run id, which the
// service dispatched for bench bn (locked by tx) but is not bn's recorded
// run. The API call is the job's, outside the transaction.
func cancelDuplicate(ctx context.Context, tx *state.Tx, bn state.Bench, id int64) error {
	if id == bn.WorkflowRunID {
		return nil
	}
	_, err := tx.Enqueue(ctx, cancelDuplicateJob{Run: bn.Run, WorkflowRun: id}, pendingOnce)
	return err
}

// workCancelDuplicate cancels a second Actions run of a bench (see
// cancelDuplicateJob); never the run recorded for it, nor a run of a bench
// with none recorded, which may yet be recorded.
func (b *Bot) workCancelDuplicate(ctx context.Context, job *river.Job[cancelDuplicateJob]) error {
	var bn state.Bench
	var found bool
	if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
		bn, found, err = tx.Bench(ctx, job.Args.Run)
		return err
	}); err != nil || !found || bn.WorkflowRunID == 0 || bn.WorkflowRunID == job.Args.WorkflowRun {
		return err
	}
	c, err := b.cfg.Clients.Client(ctx, bn.Installation)
	if err != nil {
		return err
	}
	b.log.Info("cancelling a second workflow run of a bench", "run", bn.Run,
		"workflow_run", job.Args.WorkflowRun, "recorded", bn.WorkflowRunID)
	return cancelWorkflowRun(ctx, c, bn.Repo, job.Args.WorkflowRun)
}

// cancelWorkflowRun asks GitHub to cancel Actions run id of repository
// fullName ("owner/name"); a run that has ended already, or is gone, is not
// an error.
func cancelWorkflowRun(ctx context.Context, c *github.Client, fullName string, id int64) error {
	owner, name, _ := strings.Cut(fullName, "/")
	// GitHub answers 202 Accepted, which go-github reports as an
	// *AcceptedError: the cancellation is under way; 409 means it ended.
	_, err := c.Actions.CancelWorkflowRunByID(ctx, owner, name, id)
	var accepted *github.AcceptedError
	var e *github.ErrorResponse
	switch {
	case err == nil, errors.As(err, &accepted):
		return nil
	case errors.As(err, &e) && e.Response != nil && (e.Response.StatusCode == http.StatusConflict || e.Response.StatusCode == http.StatusNotFound):
		return nil
	}
	return fmt.Errorf("cancel workflow run %d of %s: %w", id, fullName, err)
}

// WorkflowTitle is the name the workflow gives the run the service
// dispatched for run id, topped up topUp times: "pairbench <run id>", and
// "pairbench <run id>+<top_up>" for a top-up (the example workflow's
// run-name), so each of a run's dispatches is told from the others by its
// name as by its check run's external id.
func WorkflowTitle(id RunID, topUp int) string {
	if topUp == 0 {
		return "pairbench " + string(id)
	}
	return fmt.Sprintf("pairbench %s+%d", id, topUp)
}

// runIDFromTitle reads the run id and the top-up from a workflow run's
// display title (WorkflowTitle).
func runIDFromTitle(title string) (id RunID, topUp int, ok bool) {
	rest, ok := strings.CutPrefix(title, "pairbench ")
	rest = strings.TrimSpace(rest)
	if r, n, cut := strings.Cut(rest, "+"); cut {
		var err error
		if topUp, err = strconv.Atoi(n); err != nil || topUp < 1 || strconv.Itoa(topUp) != n {
			return "", 0, false
		}
		rest = r
	}
	if _, _, valid := parseRunID(RunID(rest)); !ok || !valid {
		return "", 0, false
	}
	return RunID(rest), topUp, true
}

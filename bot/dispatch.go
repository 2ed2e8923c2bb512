package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"
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

// Request is one bench the bot asks a Dispatcher to run.
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
}

// Dispatcher runs benches somewhere: on this host (the local backend,
// wired in cmd/pairbench over package runner) or on GitHub Actions
// (Actions, in this package).
//
// The contract:
//   - Dispatch returns once the bench is queued; it must not wait for the
//     bench. The run's files go to the artifact store under req.RunID/, and
//     report.json there is the verdict.
//   - The backend tells the Bot how the run goes: a local backend calls
//     (*Bot).Progress as pairs finish and (*Bot).Finished exactly once when
//     the run ends (with a nil error only if report.json is stored); the
//     Actions backend needs nothing, as the workflow_run webhook reports the
//     end and (*Bot).Reap catches runs that never report.
//   - Cancel stops the run req started. Cancelling a run that already ended,
//     or that the backend does not know, is not an error; a cancelled run's
//     later Finished call is ignored by the Bot.
type Dispatcher interface {
	Dispatch(ctx context.Context, req Request) error
	Cancel(ctx context.Context, req Request) error
}

// Limits of workflow_dispatch.
const (
	maxWorkflowInputs     = 25
	maxWorkflowInputChars = 65535
)

// ErrInputsTooLarge is returned (wrapped) by Actions.Dispatch when a
// request does not fit in workflow_dispatch's inputs.
var ErrInputsTooLarge = errors.New("bench request does not fit in workflow_dispatch inputs")

// Actions dispatches benches to GitHub Actions: a workflow_dispatch of the
// registry's own pairbench workflow on its default branch, never on the pull
// request's branch, so the workflow that runs is always one a maintainer
// merged. The workflow must declare the inputs run_id, pr, head_sha,
// domains, intents, pairs and model, and set
//
//	run-name: pairbench ${{ inputs.run_id }}
//
// so that its workflow_run events name the run (see docs/github-app.md).
type Actions struct {
	clients  Clients
	workflow string
}

// DefaultWorkflow is the workflow file Actions dispatches by default.
const DefaultWorkflow = "pairbench.yml"

// NewActions returns the Actions backend dispatching workflow (a file name
// under .github/workflows; "" means DefaultWorkflow).
func NewActions(clients Clients, workflow string) *Actions {
	if workflow == "" {
		workflow = DefaultWorkflow
	}
	return &Actions{clients: clients, workflow: workflow}
}

// Workflow returns the workflow file name the backend dispatches.
func (a *Actions) Workflow() string { return a.workflow }

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
	n := 0
	for k, v := range in {
		n += len(k) + len(v.(string))
	}
	if len(in) > maxWorkflowInputs || n > maxWorkflowInputChars {
		return nil, fmt.Errorf("%w: %d inputs, %d characters", ErrInputsTooLarge, len(in), n)
	}
	return in, nil
}

// Dispatch sends the workflow_dispatch event.
func (a *Actions) Dispatch(ctx context.Context, req Request) error {
	inputs, err := WorkflowInputs(req)
	if err != nil {
		return err
	}
	c, err := a.clients.Client(ctx, req.Repo.Installation)
	if err != nil {
		return err
	}
	_, err = c.Actions.CreateWorkflowDispatchEventByFileName(ctx, req.Repo.Owner, req.Repo.Name, a.workflow,
		github.CreateWorkflowDispatchEventRequest{Ref: req.Repo.DefaultBranch, Inputs: inputs})
	if err != nil {
		return fmt.Errorf("dispatch %s on %s@%s: %w", a.workflow, req.Repo.FullName(), req.Repo.DefaultBranch, err)
	}
	return nil
}

// Cancel cancels the workflow runs of req that have not completed. A run
// not yet listed cannot be cancelled; when it completes, the Bot ignores it.
func (a *Actions) Cancel(ctx context.Context, req Request) error {
	c, err := a.clients.Client(ctx, req.Repo.Installation)
	if err != nil {
		return err
	}
	opts := &github.ListWorkflowRunsOptions{Event: "workflow_dispatch", ListOptions: github.ListOptions{PerPage: 100}}
	runs, _, err := c.Actions.ListWorkflowRunsByFileName(ctx, req.Repo.Owner, req.Repo.Name, a.workflow, opts)
	if err != nil {
		return fmt.Errorf("list runs of %s: %w", a.workflow, err)
	}
	for _, r := range runs.WorkflowRuns {
		if id, ok := runIDFromTitle(r.GetDisplayTitle()); ok && id == req.RunID && r.GetStatus() != "completed" {
			// GitHub answers 202 Accepted, which go-github reports as an
			// *AcceptedError: the cancellation is under way.
			_, err := c.Actions.CancelWorkflowRunByID(ctx, req.Repo.Owner, req.Repo.Name, r.GetID())
			var accepted *github.AcceptedError
			if err != nil && !errors.As(err, &accepted) {
				return fmt.Errorf("cancel workflow run %d: %w", r.GetID(), err)
			}
		}
	}
	return nil
}

// runIDFromTitle reads the run id from a workflow run's display title,
// "pairbench <run id>".
func runIDFromTitle(title string) (RunID, bool) {
	rest, ok := strings.CutPrefix(title, "pairbench ")
	id := RunID(strings.TrimSpace(rest))
	if _, _, valid := parseRunID(id); !ok || !valid {
		return "", false
	}
	return id, true
}

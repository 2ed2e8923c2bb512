package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state"
)

// The transitions of a bench. Each runs inside a state transaction, with
// the pull request locked, and inserts the jobs that show its result.

// startBench supersedes the pull request's running bench and records a new
// one for sha, queued with its check run and its backend's job.
func (b *Bot) startBench(ctx context.Context, tx *state.Tx, pull *state.Pull, sha string, p plan, cmd Command, by string) (state.Bench, error) {
	bn := state.Bench{
		Run: string(newRunID(pull.PR, sha)), Repo: pull.Repo, PR: pull.PR, Installation: pull.Installation, SHA: sha,
		DefaultBranch: pull.DefaultBranch, Backend: b.cfg.Backend, Domains: p.Domains, Intents: cmd.Intents,
		Pairs: cmd.Pairs, Model: cmd.Model, Agent: cmd.Agent, Base: p.Base, FailOn: p.FailOn, RequestedBy: by, State: state.BenchQueued, Created: tx.Now(), CheckVersion: 1,
	}
	if bn.Pairs == 0 {
		bn.Pairs = b.cfg.Pairs
	}
	if bn.Model == "" {
		bn.Model = b.cfg.Model
	}
	if err := b.supersede(ctx, tx, pull, fmt.Sprintf("Superseded by run `%s` of %s.", bn.Run, short(sha))); err != nil {
		return bn, err
	}
	var err error
	if b.cfg.Backend == BackendLocal {
		bn.JobID, err = tx.Enqueue(ctx, localRunJob{Run: bn.Run}, nil)
	} else {
		_, err = tx.Enqueue(ctx, dispatchJob{Run: bn.Run}, nil)
	}
	if err != nil {
		return bn, err
	}
	if err := tx.InsertBench(ctx, bn); err != nil {
		return bn, err
	}
	// The check run shows "queued" only if the bench has not started (or
	// been dispatched) after QueuedCheckDelay; else it is created showing
	// the bench in progress.
	queued := *pendingOnce
	if b.cfg.QueuedCheckDelay > 0 {
		queued.ScheduledAt = tx.Now().Add(b.cfg.QueuedCheckDelay)
	}
	if _, err := tx.Enqueue(ctx, checkJob{Run: bn.Run, Version: bn.CheckVersion}, &queued); err != nil {
		return bn, err
	}
	pull.Bench = bn.Run
	if pull.ApprovalSHA == sha && pull.ApprovalBody != "" {
		pull.ApprovalBody = approvedBody(sha, by, bn.Run)
		pull.SurfaceVersion++
		if err := enqueueSurface(ctx, tx, *pull); err != nil {
			return bn, err
		}
	}
	b.log.Info("bench recorded", "run", bn.Run, "repo", bn.Repo, "pr", bn.PR, "sha", short(sha), "domains", bn.Domains, "by", by)
	return bn, nil
}

// topUp carries out /bench more: it reopens the pull request's last bench
// of its head, when that bench ended with a verdict, to run add more pairs
// per intent (as many as it has when add is 0) under the same run id: the
// run resumes with the larger count and runs only the new pairs
// (bench.Config.PairsGiven, rundir.Plan.TopUp), and its report decides at
// the look it reached. On the local backend the bench's job resumes it;
// on the Actions backend the workflow is dispatched again with the same
// run id, the new pairs and top_up, and resumes the run from the artifact
// store (the Action's resume input); only the new dispatch's workflow run
// may end the bench. The reopened bench shows on a new check run (GitHub
// never reopens a completed one) and supersedes nothing: no other bench is
// running. It returns the reply, a refusal saying why when there is
// nothing to top up.
func (b *Bot) topUp(ctx context.Context, tx *state.Tx, pull *state.Pull, add int, by string) (string, error) {
	if pull.Bench != "" {
		return fmt.Sprintf("Run `%s` is still running: `/bench more` tops a run up once it has ended. Comment `/bench status` to see it.", pull.Bench), nil
	}
	benches, err := tx.BenchesOfPull(ctx, pull.Repo, pull.PR)
	if err != nil {
		return "", err
	}
	var last *state.Bench
	for i, bn := range benches { // newest first
		if bn.SHA == pull.HeadSHA && pull.HeadSHA != "" {
			last = &benches[i]
			break
		}
	}
	switch {
	case last == nil:
		return fmt.Sprintf("Nothing to top up: the head %s has no bench. Comment `/bench run` to start one.", codeOrNone(short(pull.HeadSHA))), nil
	case last.State != state.BenchDone:
		return fmt.Sprintf("Nothing to top up: the last bench of %s, run `%s`, ended without a verdict (%s). Comment `/bench run` to start a new one.",
			short(last.SHA), last.Run, last.State), nil
	case pairbench.Label(last.Verdict).Claims():
		return fmt.Sprintf("Run `%s` already reached a verdict, `%s`: its α is spent on that claim, so more pairs would test again what it decided, which its design does not cover. Comment `/bench run` for a new run.",
			last.Run, last.Verdict), nil
	}
	if add == 0 {
		add = last.Pairs
	}
	if last.Pairs+add > MaxPairs {
		return fmt.Sprintf("Run `%s` has %d pairs per intent: %d more would pass the limit of %d.", last.Run, last.Pairs, add, MaxPairs), nil
	}
	bn := *last
	bn.Pairs += add
	bn.TopUps++
	bn.State, bn.Reason, bn.Verdict, bn.RequestedBy = state.BenchQueued, "", "", by
	bn.Created, bn.Ended, bn.Dispatched = tx.Now(), time.Time{}, time.Time{}
	recordProgress(&bn, rundir.Progress{})
	bn.CheckID, bn.CheckVersion, bn.CheckPosted = 0, bn.CheckVersion+1, bn.CheckVersion
	if bn.Backend == BackendLocal {
		bn.JobID, err = tx.Enqueue(ctx, localRunJob{Run: bn.Run}, nil)
	} else {
		// The run of the last dispatch is over; the new one is recorded
		// when it is dispatched (or named, WorkflowTitle).
		bn.WorkflowRunID, bn.WorkflowRunURL = 0, ""
		_, err = tx.Enqueue(ctx, dispatchJob{Run: bn.Run}, nil)
	}
	if err != nil {
		return "", err
	}
	if err := tx.SaveBench(ctx, bn); err != nil {
		return "", err
	}
	if _, err := tx.Enqueue(ctx, checkJob{Run: bn.Run, Version: bn.CheckVersion}, pendingOnce); err != nil {
		return "", err
	}
	pull.Bench = bn.Run
	b.log.Info("bench topped up", "run", bn.Run, "pairs", bn.Pairs, "backend", bn.Backend, "by", by)
	return fmt.Sprintf("@%s: topping up run `%s` of `%s` with %d more pairs per intent (%d in all); only the new pairs run. The `%s` check shows its progress.",
		by, bn.Run, short(bn.SHA), add, bn.Pairs, CheckName), nil
}

func codeOrNone(s string) string {
	if s == "" {
		return "(none recorded)"
	}
	return "`" + s + "`"
}

// supersede cancels the bench running for the pull request, if any.
func (b *Bot) supersede(ctx context.Context, tx *state.Tx, pull *state.Pull, why string) error {
	if pull.Bench == "" {
		return nil
	}
	run := pull.Bench
	pull.Bench = ""
	return endBenchLocked(ctx, tx, pull, run, state.BenchCancelled, why, "")
}

// endBench ends a bench (unless it already ended): its record, its check
// run, the pull request's surface when it ends with a result, and, when it
// is cancelled, its backend's run.
func endBench(ctx context.Context, tx *state.Tx, run, to, reason, verdict string) error {
	bn, found, err := tx.Bench(ctx, run)
	if err != nil || !found || bn.Over() {
		return err
	}
	pull, err := tx.LockPull(ctx, bn.Repo, bn.PR)
	if err != nil {
		return err
	}
	if err := endBenchLocked(ctx, tx, &pull, run, to, reason, verdict); err != nil {
		return err
	}
	return tx.SavePull(ctx, pull)
}

// endBenchLocked is endBench with the pull request locked and saved by the
// caller.
func endBenchLocked(ctx context.Context, tx *state.Tx, pull *state.Pull, run, to, reason, verdict string) error {
	bn, found, err := tx.LockBench(ctx, run)
	if err != nil || !found || bn.Over() {
		return err
	}
	bn.State, bn.Reason, bn.Verdict, bn.Ended = to, redact(reason), verdict, tx.Now()
	bn.CheckVersion++
	if err := tx.SaveBench(ctx, bn); err != nil {
		return err
	}
	if _, err := tx.Enqueue(ctx, checkJob{Run: run, Version: bn.CheckVersion}, pendingOnce); err != nil {
		return err
	}
	if pull.Bench == run {
		pull.Bench = ""
	}
	switch to {
	case state.BenchCancelled:
		_, err = tx.Enqueue(ctx, cancelJob{Run: run}, nil)
	default:
		pull.SurfaceVersion++
		err = enqueueSurface(ctx, tx, *pull)
	}
	return err
}

func enqueueSurface(ctx context.Context, tx *state.Tx, pull state.Pull) error {
	_, err := tx.Enqueue(ctx, surfaceJob{Repo: pull.Repo, PR: pull.PR, Version: pull.SurfaceVersion}, pendingOnce)
	return err
}

// request is the dispatcher's view of a bench record.
func request(bn state.Bench) Request {
	owner, name, _ := strings.Cut(bn.Repo, "/")
	return Request{
		RunID: RunID(bn.Run), Repo: Repo{Owner: owner, Name: name, DefaultBranch: bn.DefaultBranch, Installation: bn.Installation},
		PR: bn.PR, HeadSHA: bn.SHA, Domains: bn.Domains, Intents: bn.Intents, Pairs: bn.Pairs, Model: bn.Model,
		Agent: bn.Agent, Base: bn.Base, TopUp: bn.TopUps,
	}
}

// describe says what a bench benches.
func describe(bn state.Bench) string {
	var parts []string
	if len(bn.Intents) > 0 {
		parts = append(parts, "intents "+codeList(bn.Intents))
	} else {
		parts = append(parts, "every intent of "+domainList(bn.Domains))
	}
	if bn.Base == "" {
		parts = append(parts, "against no tools")
	} else {
		parts = append(parts, "each domain against what its changes call for (base "+short(bn.Base)+"'s tools where they changed)")
	}
	if bn.Pairs > 0 {
		parts = append(parts, fmt.Sprintf("%d pairs each", bn.Pairs))
	}
	if bn.Model != "" {
		parts = append(parts, "model `"+bn.Model+"`")
	}
	if bn.Agent != "" {
		parts = append(parts, "agent `"+bn.Agent+"`")
	}
	return strings.Join(parts, ", ")
}

// statusText answers /bench status from the records.
func statusText(pull state.Pull, benches []state.Bench, now time.Time) string {
	for _, bn := range benches {
		if bn.Run != pull.Bench {
			continue
		}
		s := fmt.Sprintf("Run `%s` is benching %s: %s. Started %s ago", bn.Run, short(bn.SHA), describe(bn),
			now.Sub(bn.Created).Round(time.Second))
		if done := progressTitle(bn); done != "" {
			s += "; " + done
		}
		return s + "."
	}
	s := "No bench is running on this pull request."
	for _, bn := range benches {
		if bn.State == state.BenchDone || bn.State == state.BenchFailed {
			what := "bench: " + bn.Verdict
			if bn.State == state.BenchFailed {
				what = "failed"
			}
			s += fmt.Sprintf(" The last one, run `%s` of %s, ended: %s.", bn.Run, short(bn.SHA), what)
			break
		}
	}
	return s + " Comment `/bench run` to start one."
}

func decodeArgs(raw []byte, v any) error { return json.Unmarshal(raw, v) }

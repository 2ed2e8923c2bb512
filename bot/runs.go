package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/stats"
)

// ErrUnknownRun is returned (wrapped) by Progress for a run the bot is not
// waiting for.
var ErrUnknownRun = errors.New("unknown or ended run")

// running returns the bench running for t's pull request.
func (b *Bot) running(t Target) (bench, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	be, ok := b.runs[b.byPR[prKey{t.Owner + "/" + t.Repo, t.PR}]]
	if !ok {
		return bench{}, false
	}
	return *be, true
}

// take removes and returns the bench running for t's pull request, or nil.
// Whoever takes a bench is the one who ends it, so it is ended once.
func (b *Bot) take(t Target) *bench {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := prKey{t.Owner + "/" + t.Repo, t.PR}
	id, ok := b.byPR[key]
	if !ok {
		return nil
	}
	return b.removeLocked(id)
}

// takeRun removes and returns the bench of run id, or nil.
func (b *Bot) takeRun(id RunID) *bench {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.removeLocked(id)
}

func (b *Bot) removeLocked(id RunID) *bench {
	be, ok := b.runs[id]
	if !ok {
		return nil
	}
	delete(b.runs, id)
	key := prKey{be.req.Repo.FullName(), be.req.PR}
	if b.byPR[key] == id {
		delete(b.byPR, key)
	}
	return be
}

// start supersedes the pull request's running bench, creates the new
// bench's check run and dispatches it. A dispatch that fails is posted as a
// failed bench and returned.
func (b *Bot) start(ctx context.Context, c *github.Client, repo Repo, t Target, p plan, cmd Command, by string) (*bench, error) {
	req := Request{
		RunID:   newRunID(t.PR, t.SHA),
		Repo:    repo,
		PR:      t.PR,
		HeadSHA: t.SHA,
		Domains: p.Domains,
		Intents: cmd.Intents,
		Pairs:   cmd.Pairs,
		Model:   cmd.Model,
	}
	if req.Pairs == 0 {
		req.Pairs = b.cfg.Pairs
	}
	if req.Model == "" {
		req.Model = b.cfg.Model
	}
	b.supersede(ctx, t, fmt.Sprintf("Run `%s` for `%s` superseded this bench.", req.RunID, short(t.SHA)))

	summary := fmt.Sprintf("Bench of `%s`: %s.", short(t.SHA), describe(req))
	if by != "" {
		summary += fmt.Sprintf(" Requested by @%s.", by)
	}
	cr, err := createCheck(ctx, c, t, req.RunID, summary, b.cfg.Now())
	if err != nil {
		return nil, err
	}
	be := &bench{req: req, check: cr, by: by, started: b.cfg.Now()}
	b.mu.Lock()
	b.runs[req.RunID] = be
	b.byPR[prKey{repo.FullName(), t.PR}] = req.RunID
	b.mu.Unlock()

	if err := b.cfg.Dispatcher.Dispatch(ctx, req); err != nil {
		if mine := b.takeRun(req.RunID); mine != nil {
			if ferr := b.fail(ctx, mine, "The bench could not be started: "+err.Error()); ferr != nil {
				b.log.Warn("could not post the failure", "run", req.RunID, "err", ferr)
			}
		}
		return nil, fmt.Errorf("dispatch run %s: %w", req.RunID, err)
	}
	b.log.Info("bench dispatched", "run", req.RunID, "repo", repo.FullName(), "pr", t.PR, "sha", short(t.SHA), "domains", req.Domains)
	return be, nil
}

// describe says what a request benches.
func describe(req Request) string {
	var parts []string
	if len(req.Intents) > 0 {
		parts = append(parts, "intents "+codeList(req.Intents))
	} else {
		parts = append(parts, "every intent of "+domainList(req.Domains))
	}
	if req.Pairs > 0 {
		parts = append(parts, fmt.Sprintf("%d pairs each", req.Pairs))
	}
	if req.Model != "" {
		parts = append(parts, "model `"+req.Model+"`")
	}
	return strings.Join(parts, ", ")
}

// supersede cancels the bench running for t's pull request, if any, and
// says why on its check run.
func (b *Bot) supersede(ctx context.Context, t Target, why string) {
	be := b.take(t)
	if be == nil {
		return
	}
	b.stop(ctx, be, "superseded", why)
}

// stop cancels a taken bench and completes its check run as cancelled.
func (b *Bot) stop(ctx context.Context, be *bench, title, why string) {
	if err := b.cfg.Dispatcher.Cancel(ctx, be.req); err != nil {
		b.log.Warn("could not cancel the run", "run", be.req.RunID, "err", err)
	}
	if err := be.check.complete(ctx, conclusionCancelled, title, why, b.cfg.Now()); err != nil {
		b.log.Warn("could not complete the check run", "run", be.req.RunID, "err", err)
	}
	b.log.Info("bench stopped", "run", be.req.RunID, "why", why)
}

// cancelCommand carries out /bench cancel.
func (b *Bot) cancelCommand(ctx context.Context, c *github.Client, t Target, user string) error {
	be := b.take(t)
	if be == nil {
		return reply(ctx, c, t, "No bench is running on this pull request.")
	}
	b.stop(ctx, be, "cancelled", fmt.Sprintf("@%s cancelled this bench.", user))
	return reply(ctx, c, t, fmt.Sprintf("Cancelled run `%s` (commit `%s`).", be.req.RunID, short(be.req.HeadSHA)))
}

// status answers /bench status.
func (b *Bot) status(t Target) string {
	be, ok := b.running(t)
	if !ok {
		return "No bench is running on this pull request. Comment `/bench run` to start one."
	}
	s := fmt.Sprintf("Run `%s` is benching `%s`: %s. Started %s ago",
		be.req.RunID, short(be.req.HeadSHA), describe(be.req), b.cfg.Now().Sub(be.started).Round(time.Second))
	if be.total > 0 {
		s += fmt.Sprintf("; %d of %d pairs done", be.done, be.total)
	}
	return s + "."
}

// claim takes the bench of run id for completion. A bench the bot does
// not hold (it restarted since) is rebuilt from the run id and its check
// run; a run whose check run is already completed, or that has none, was
// cancelled or superseded, and claim returns nil.
func (b *Bot) claim(ctx context.Context, repo Repo, id RunID) (*bench, error) {
	if be := b.takeRun(id); be != nil {
		return be, nil
	}
	pr, sha, ok := parseRunID(id)
	if !ok {
		return nil, nil
	}
	c, err := b.cfg.Clients.Client(ctx, repo.Installation)
	if err != nil {
		return nil, err
	}
	t := Target{Owner: repo.Owner, Repo: repo.Name, PR: pr, SHA: sha}
	cr, found, err := findCheck(ctx, c, t, id)
	if err != nil || !found || cr.completed {
		return nil, err
	}
	return &bench{req: Request{RunID: id, Repo: repo, PR: pr, HeadSHA: sha}, check: cr}, nil
}

// Progress records that done of total pairs of run id have finished and,
// at most once per Config.ProgressEvery (and always for the last pair),
// shows it on the check run. A run the bot is not waiting for returns an
// error wrapping ErrUnknownRun; the backend may ignore it.
func (b *Bot) Progress(ctx context.Context, id RunID, done, total int) error {
	now := b.cfg.Now()
	b.mu.Lock()
	be, ok := b.runs[id]
	write := ok && (done >= total || now.Sub(be.lastProgress) >= b.cfg.ProgressEvery)
	var cr checkRun
	if ok {
		be.done, be.total = done, total
		if write {
			be.lastProgress = now
		}
		cr = be.check
	}
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("progress of run %s: %w", id, ErrUnknownRun)
	}
	if !write {
		return nil
	}
	return cr.progress(ctx, done, total)
}

// Finished ends run id: with runErr nil, it reads <id>/report.json from the
// store and posts the verdict (check run, sticky comment, label); with a
// non-nil runErr, or a report that cannot be read, it posts the failure. A
// run the bot is not waiting for (cancelled, superseded, or already
// finished) is ignored. The local backend calls it exactly once per run.
func (b *Bot) Finished(ctx context.Context, id RunID, runErr error) error {
	be := b.takeRun(id)
	if be == nil {
		b.log.Info("finished run ignored: not waiting for it", "run", id)
		return nil
	}
	if runErr != nil {
		return b.fail(ctx, be, "The run failed: "+runErr.Error())
	}
	return b.complete(ctx, be)
}

// Reap fails every bench that has not finished within Config.RunTimeout:
// its run is cancelled and the pull request says it vanished. Call it
// periodically (cmd/pairbench does, every minute). It returns the errors of
// the posts that failed.
func (b *Bot) Reap(ctx context.Context) error {
	deadline := b.cfg.Now().Add(-b.cfg.RunTimeout)
	b.mu.Lock()
	var late []RunID
	for id, be := range b.runs {
		if be.started.Before(deadline) {
			late = append(late, id)
		}
	}
	b.mu.Unlock()
	var errs []error
	for _, id := range late {
		be := b.takeRun(id)
		if be == nil {
			continue
		}
		if err := b.cfg.Dispatcher.Cancel(ctx, be.req); err != nil {
			b.log.Warn("could not cancel a vanished run", "run", id, "err", err)
		}
		errs = append(errs, b.fail(ctx, be, fmt.Sprintf("The run vanished: no result %s after it was dispatched.", b.cfg.RunTimeout)))
	}
	return errors.Join(errs...)
}

// complete reads a finished run's report and posts its verdict.
func (b *Bot) complete(ctx context.Context, be *bench) error {
	rep, err := b.readReport(ctx, be.req.RunID)
	if err != nil {
		return b.fail(ctx, be, "The run ended without a readable report: "+err.Error())
	}
	c, err := b.cfg.Clients.Client(ctx, be.req.Repo.Installation)
	if err != nil {
		return err
	}
	link := b.link(ctx, be.req.RunID)
	t := target(be.req)
	postErr := PostVerdict(ctx, c, t, Verdict{RunID: be.req.RunID, Report: rep, Link: link})
	title := "bench: " + string(rep.Verdict)
	if rep.Verdict == "" {
		title = "no verdict: no intents were benched"
	}
	summary := stats.Markdown(rep, stats.MarkdownOptions{FullReportURL: link, Limit: 60000})
	checkErr := be.check.complete(ctx, Conclusion(rep.Verdict), title, summary, b.cfg.Now())
	b.log.Info("bench finished", "run", be.req.RunID, "verdict", rep.Verdict)
	return errors.Join(postErr, checkErr)
}

// fail posts that a bench failed, on its check run and in the sticky
// comment.
func (b *Bot) fail(ctx context.Context, be *bench, reason string) error {
	b.log.Warn("bench failed", "run", be.req.RunID, "reason", reason)
	checkErr := be.check.complete(ctx, conclusionFailure, "bench failed", reason, b.cfg.Now())
	c, err := b.cfg.Clients.Client(ctx, be.req.Repo.Installation)
	if err != nil {
		return errors.Join(checkErr, err)
	}
	return errors.Join(checkErr, PostFailure(ctx, c, target(be.req), be.req.RunID, reason))
}

func target(req Request) Target {
	return Target{Owner: req.Repo.Owner, Repo: req.Repo.Name, PR: req.PR, SHA: req.HeadSHA}
}

// readReport reads <id>/report.json from the store.
func (b *Bot) readReport(ctx context.Context, id RunID) (*stats.Report, error) {
	r, err := b.cfg.Store.Get(ctx, string(id)+"/report.json")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rep, err := stats.ReadJSON(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s/report.json: %w", id, err)
	}
	return rep, nil
}

// link presigns the full report: report.html, else report.md; "" if
// neither can be linked.
func (b *Bot) link(ctx context.Context, id RunID) string {
	for _, name := range []string{"report.html", "report.md"} {
		u, err := b.cfg.Store.Presign(ctx, string(id)+"/"+name, b.cfg.ReportTTL)
		if err == nil {
			return u
		}
		if !errors.Is(err, artifacts.ErrNotExist) {
			b.log.Warn("could not link the report", "run", id, "err", err)
		}
	}
	return ""
}

package bot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/pairbench/pairbench/state"
)

// The bot's jobs. Each is small, idempotent and safe to run again: a job
// that dies half-way (a crash, a timeout) is run again from the start.

// checkJob brings a bench's check run (or commit status) to what the bench
// record says it should show, at Version or newer. The version makes each
// change's job distinct from one already running, which may have read the
// record before the change.
type checkJob struct {
	Run     string `json:"run"`
	Version int64  `json:"version"`
}

func (checkJob) Kind() string { return "check" }

// surfaceJob brings a pull request's sticky comment, approval request and
// label to what the records say.
type surfaceJob struct {
	Repo    string `json:"repo"`
	PR      int    `json:"pr"`
	Version int64  `json:"version"`
}

func (surfaceJob) Kind() string { return "surface" }

// dispatchJob starts a bench on GitHub Actions and records the run id.
type dispatchJob struct {
	Run string `json:"run"`
}

func (dispatchJob) Kind() string { return "dispatch" }

// cancelJob stops a cancelled bench on its backend.
type cancelJob struct {
	Run string `json:"run"`
}

func (cancelJob) Kind() string { return "cancel" }

// cancelDuplicateJob stops an Actions run the service dispatched for bench
// Run that is not the run recorded for it (a bench dispatched twice). A
// failure is logged; it fails no bench.
type cancelDuplicateJob struct {
	Run         string `json:"run"`
	WorkflowRun int64  `json:"workflow_run"`
}

func (cancelDuplicateJob) Kind() string { return "cancel_duplicate" }

// finishJob ends a bench whose backend says it ended: it reads the report
// (when OK) and records the verdict or the failure.
type finishJob struct {
	Run    string `json:"run"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

func (finishJob) Kind() string { return "finish" }

// replyJob posts one comment on a pull request.
type replyJob struct {
	Repo         string `json:"repo"`
	PR           int    `json:"pr"`
	Installation int64  `json:"installation"`
	Body         string `json:"body"`
	// Key marks the comment, so a retry finds a reply already posted.
	Key string `json:"key"`
}

func (replyJob) Kind() string { return "reply" }

// reactJob acknowledges a command with a reaction.
type reactJob struct {
	Repo         string `json:"repo"`
	Installation int64  `json:"installation"`
	CommentID    int64  `json:"comment_id"`
	Content      string `json:"content"`
}

func (reactJob) Kind() string { return "react" }

// reapJob ends what nothing else will end (see workReap).
type reapJob struct{}

func (reapJob) Kind() string { return "reap" }

// localRunJob runs a bench on this host.
type localRunJob struct {
	Run string `json:"run"`
}

func (localRunJob) Kind() string { return "local_run" }

// InsertOpts puts local benches on their own queue.
func (localRunJob) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: state.QueueBench} }

// pendingOnce makes a job unique among those not finished: a second insert
// of the same arguments is dropped.
var pendingOnce = &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateScheduled, rivertype.JobStateRunning,
	rivertype.JobStateRetryable,
}}}

// worker adapts a bot method to River.
type worker[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	b       *Bot
	work    func(ctx context.Context, job *river.Job[T]) error
	timeout time.Duration
}

func (w *worker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	return asSnooze(w.work(ctx, job))
}

func (w *worker[T]) Timeout(*river.Job[T]) time.Duration { return w.timeout }

// asSnooze turns GitHub's rate limits into a wait until they reset: the job
// is tried again then, without spending an attempt, and nothing else of
// the installation is refused meanwhile.
func asSnooze(err error) error {
	if err == nil {
		return nil
	}
	if d, ok := rateLimited(err); ok {
		return river.JobSnooze(d)
	}
	var lag *lagError
	if errors.As(err, &lag) {
		return river.JobSnooze(lag.wait)
	}
	return err
}

// rateLimited reports whether err is a GitHub rate limit, primary or
// secondary, and how long to wait. go-github maps only 403 answers to its
// rate-limit errors; GitHub answers 429 as well, which is read here the
// same way: Retry-After first, then the primary limit's reset when none
// remains, else a minute (GitHub's advice for a secondary limit).
func rateLimited(err error) (time.Duration, bool) {
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return clampWait(time.Until(rl.Rate.Reset.Time) + time.Second), true
	}
	var ab *github.AbuseRateLimitError
	if errors.As(err, &ab) {
		if ab.RetryAfter != nil {
			return clampWait(*ab.RetryAfter + time.Second), true
		}
		return time.Minute, true
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		if code := er.Response.StatusCode; code == http.StatusTooManyRequests || code == http.StatusForbidden {
			return waitOf(er.Response)
		}
	}
	return 0, false
}

// clampWait keeps a rate-limit wait between 1 s and an hour (GitHub's
// primary window), whatever a clock skew or a header says.
func clampWait(d time.Duration) time.Duration { return min(max(d, time.Second), time.Hour) }

// retryPolicy retries a failed job after 1 s, 2 s, 4 s, … up to 5 minutes,
// with jitter: with the default 20 attempts a job keeps trying for over an
// hour before it gives up.
type retryPolicy struct{}

func (retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	d := min(time.Second<<min(max(job.Attempt-1, 0), 9), 5*time.Minute)
	d += time.Duration(rand.Int64N(int64(d/4) + 1))
	return time.Now().Add(d)
}

// errorHandler makes a job that gives up end visibly: a log line, a metric
// and, for a job a bench depends on, the bench failed with the reason.
type errorHandler struct{ b *Bot }

func (h errorHandler) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	log := h.b.log.With("job", job.Kind, "job_id", job.ID, "attempt", job.Attempt)
	if job.Attempt < job.MaxAttempts {
		log.Warn("job failed; it will be tried again", "err", err)
		return nil
	}
	h.b.gaveUp(ctx, job, err.Error())
	return nil
}

func (h errorHandler) HandlePanic(ctx context.Context, job *rivertype.JobRow, v any, trace string) *river.ErrorHandlerResult {
	h.b.log.Error("job panicked", "job", job.Kind, "job_id", job.ID, "panic", v, "trace", trace)
	if job.Attempt >= job.MaxAttempts {
		h.b.gaveUp(ctx, job, fmt.Sprintf("panic: %v", v))
	}
	return nil
}

// gaveUp reports a job that failed its last attempt.
func (b *Bot) gaveUp(ctx context.Context, job *rivertype.JobRow, reason string) {
	b.cfg.Metrics.GaveUp(job.Kind)
	b.log.Error("job gave up", "job", job.Kind, "job_id", job.ID, "attempts", job.Attempt, "err", reason)
	run := runOfJob(job)
	if run == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	why := fmt.Sprintf("pairbench gave up on this bench after %d tries of its %s step: %s", job.Attempt, job.Kind, redact(reason))
	if err := b.state.Update(ctx, func(tx *state.Tx) error { return endBench(ctx, tx, run, state.BenchFailed, why, "") }); err != nil {
		b.log.Error("could not record that a bench failed", "run", run, "err", err)
	}
}

// runOfJob returns the run id a bench's job is about, "" for other jobs.
// A check job is not included: it is how a failure is shown, and the reaper
// tries it again later.
func runOfJob(job *rivertype.JobRow) string {
	var args struct {
		Run string `json:"run"`
	}
	switch job.Kind {
	case dispatchJob{}.Kind(), finishJob{}.Kind(), localRunJob{}.Kind():
		if decodeArgs(job.EncodedArgs, &args) == nil {
			return args.Run
		}
	}
	return ""
}

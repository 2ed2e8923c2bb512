// Package bot makes pairbench's GitHub decisions: which pull requests to
// bench and at which commit, who may command it, which backend runs the
// bench, and what the pull request shows when the bench ends — one check
// run per bench (a commit status with a plain token), one sticky rollup
// comment, and one "bench: <label>" label.
//
// It is the only package that imports go-github. Its memory is package
// state: every delivery package server accepted is stored there with a job
// that handles it, and every decision is a transaction that records what
// changed and inserts the jobs that make GitHub show it. Each GitHub write
// is a job of its own, retried with backoff (waiting out rate limits) until
// it succeeds or gives up visibly, so a crash, a restart or a GitHub outage
// delays work but loses none.
//
// A delivery goes through the same steps, in order: the server has verified
// and stored it; the delivery job parses it; ignores what is not for the
// bot (other actions, comments without a /bench command, its own comments,
// repositories without .pairbench.yml); reads what the decision needs from
// GitHub; allows only who may act (trusted authors for automatic benches,
// users with write access for commands); and decides, in one transaction
// that also marks the delivery handled, so it is decided once.
package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state"
)

// Events returns the webhook events the bot acts on (for server.Config.Events).
func Events() []string {
	return []string{"pull_request", "issue_comment", "workflow_run", "check_run", "check_suite", "installation", "installation_repositories"}
}

// PayloadError reports a delivery whose payload does not decode as its
// event.
type PayloadError struct {
	Event string
	Err   error
}

func (e *PayloadError) Error() string { return fmt.Sprintf("%s payload: %v", e.Event, e.Err) }
func (e *PayloadError) Unwrap() error { return e.Err }

// Backends.
const (
	BackendLocal   = "local"
	BackendActions = "actions"
)

// Runner runs a bench on this host (the local backend; cmd/pairbench wires
// it over the bench library). Run blocks until the bench ends: nil only if
// <run id>/report.json is in the store. It calls progress with the
// engine's progress (bench.Hooks.Progress: the pairs done of those in
// force, the look under way, the look that stopped the run) as it moves;
// progress returns at once. Run resumes a run id it ran before (after a
// crash or a restart). When ctx is cancelled it stops promptly and returns
// ctx's error.
type Runner interface {
	Run(ctx context.Context, req Request, progress func(rundir.Progress)) error
}

// Metrics is what the bot counts; package server's Metrics provides it.
type Metrics interface {
	// Dispatched counts a bench started on backend with result.
	Dispatched(backend, result string)
	// GaveUp counts a job of kind that failed its last attempt.
	GaveUp(kind string)
}

// Config configures a Bot. Clients, State, Store and a backend (Runner, or
// Backend "actions") are required.
type Config struct {
	// Clients gives the GitHub client for an installation: AppClients for
	// the GitHub App, TokenClients for a plain token.
	Clients Clients
	// State opens the service's durable state.
	State state.Config
	// Store holds the runs; the bot reads <run id>/report.json there.
	Store artifacts.Store
	// Backend is BackendLocal (Runner runs the benches) or BackendActions.
	Backend string
	// Runner runs local benches.
	Runner Runner
	// Workflow is the Actions workflow file dispatched, whose workflow_run
	// events end benches; "" means DefaultWorkflow.
	Workflow string
	// CheckRegistry, when set, checks a pull request's registry before the
	// Actions backend dispatches its bench: tree is the repository at the
	// commit benched, read through the contents API, and commit its id. An
	// error it returns says what is wrong with the registry (the service
	// gives bench.LoadGitRegistry's, every problem by file and line): the
	// bench then fails with it, undispatched, and the check run and the
	// comment quote it. A registry the API cannot read whole is dispatched
	// unchecked (the workflow's run checks it).
	CheckRegistry func(tree fs.FS, commit string) error
	// CommitStatuses makes the bot post commit statuses instead of check
	// runs: a plain token cannot create check runs (only Apps can).
	CommitStatuses bool
	// PublicURL is the service's own https:// address; report links in
	// comments point there (see ReportHandler). "" posts no links.
	PublicURL string
	// LinkKey signs report links; required with PublicURL.
	LinkKey []byte
	// Pairs and Model are the defaults for a bench; 0 and "" leave the choice
	// to the backend.
	Pairs int
	Model string
	// RunTimeout is how long a bench may go without finishing after it
	// started (the local run began, or the workflow was dispatched) before
	// the reaper declares it vanished; default 6 hours.
	RunTimeout time.Duration
	// QueueTimeout is how long a bench may wait to start (behind other
	// local benches, a rate limit, a failing dispatch) before the reaper
	// fails it; default 24 hours.
	QueueTimeout time.Duration
	// ProgressEvery is the shortest interval between two progress updates
	// of a check run (GitHub limits content writes); default a minute.
	ProgressEvery time.Duration
	// ReapEvery is how often the reaper runs; default a minute.
	ReapEvery time.Duration
	// QueuedCheckDelay is how long a new bench's check run waits before it
	// is created as queued: a bench that starts (or is dispatched) sooner
	// creates it in progress, a write fewer. Default 10 seconds; negative
	// creates it at once.
	QueuedCheckDelay time.Duration
	// Metrics counts; optional.
	Metrics Metrics
	// Logger receives the bot's logs; default discard.
	Logger *slog.Logger
}

// Bot handles webhook deliveries and the benches they start. It is safe for
// concurrent use.
type Bot struct {
	cfg   Config
	log   *slog.Logger
	state *state.Store
	// stopping is closed when Stop begins: a local bench interrupted then
	// is put back in the queue, not failed.
	stopping chan struct{}
	// labels remembers the "bench: " labels known to exist, by repository
	// and name, so each is created once per process, not once per bench.
	labels sync.Map
}

// Open checks cfg, opens the state and returns the Bot, whose jobs do not
// run until Start.
func Open(ctx context.Context, cfg Config) (*Bot, error) {
	if cfg.Clients == nil || cfg.Store == nil {
		return nil, errors.New("bot: Clients and Store are required")
	}
	switch {
	case cfg.Backend == BackendLocal && cfg.Runner == nil:
		return nil, errors.New("bot: the local backend needs a Runner")
	case cfg.Backend != BackendLocal && cfg.Backend != BackendActions:
		return nil, fmt.Errorf("bot: backend %q: want %s or %s", cfg.Backend, BackendLocal, BackendActions)
	case cfg.PublicURL != "" && len(cfg.LinkKey) == 0:
		return nil, errors.New("bot: report links need a LinkKey")
	}
	if cfg.Workflow == "" {
		cfg.Workflow = DefaultWorkflow
	}
	cfg.RunTimeout = orDefault(cfg.RunTimeout, 6*time.Hour)
	cfg.QueueTimeout = orDefault(cfg.QueueTimeout, 24*time.Hour)
	cfg.ProgressEvery = orDefault(cfg.ProgressEvery, time.Minute)
	cfg.ReapEvery = orDefault(cfg.ReapEvery, time.Minute)
	if cfg.QueuedCheckDelay == 0 {
		cfg.QueuedCheckDelay = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	b := &Bot{cfg: cfg, log: cfg.Logger, stopping: make(chan struct{})}
	sc := cfg.State
	sc.Workers = b.workers()
	sc.PeriodicJobs = b.periodicJobs()
	sc.ErrorHandler = errorHandler{b}
	sc.RetryPolicy = retryPolicy{}
	if sc.Logger == nil {
		sc.Logger = cfg.Logger
	}
	st, err := state.Open(ctx, sc)
	if err != nil {
		return nil, err
	}
	b.state = st
	return b, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

type noMetrics struct{}

func (noMetrics) Dispatched(string, string) {}
func (noMetrics) GaveUp(string)             {}

// State returns the bot's state store.
func (b *Bot) State() *state.Store { return b.state }

// Start runs the bot's jobs until Stop.
func (b *Bot) Start(ctx context.Context) error { return b.state.Start(ctx) }

// Stop stops the jobs: a local bench at once (it goes back in the queue and
// resumes by its run id at the next Start), the others when they end or
// when soft ends, whichever is first; then it waits for them until hard
// ends. A job cut short runs again at the next Start.
func (b *Bot) Stop(soft, hard context.Context) error {
	select {
	case <-b.stopping:
	default:
		close(b.stopping)
	}
	return b.state.Stop(soft, hard)
}

// Close closes the state; Stop first.
func (b *Bot) Close() error { return b.state.Close() }

// Delivery is one verified webhook delivery. Its fields match
// server.Delivery's one for one, so a server.Delivery d converts with
// bot.Delivery(d).
type Delivery struct {
	ID             string // X-GitHub-Delivery
	Event          string // X-GitHub-Event
	InstallationID int64  // the payload's installation.id; 0 if none
	Payload        []byte // the raw JSON body
	Logger         *slog.Logger
}

// Accept stores a delivery and the job that will handle it, and returns
// once both are committed: then, and only then, may the server answer 2xx.
// It returns false for a delivery already accepted (a redelivery).
func (b *Bot) Accept(ctx context.Context, d Delivery) (bool, error) {
	return b.state.Accept(ctx, state.Delivery{Installation: d.InstallationID, ID: d.ID, Event: d.Event, Payload: d.Payload})
}

func decode(event string, payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return &PayloadError{Event: event, Err: err}
	}
	return nil
}

// workers registers the bot's job workers.
func (b *Bot) workers() *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, &worker[state.DeliveryJob]{b: b, work: b.workDelivery})
	river.AddWorker(w, &worker[checkJob]{b: b, work: b.workCheck})
	river.AddWorker(w, &worker[surfaceJob]{b: b, work: b.workSurface})
	// A dispatch reads the registry first (Config.CheckRegistry).
	river.AddWorker(w, &worker[dispatchJob]{b: b, work: b.workDispatch, timeout: 5 * time.Minute})
	river.AddWorker(w, &worker[cancelJob]{b: b, work: b.workCancel})
	river.AddWorker(w, &worker[cancelDuplicateJob]{b: b, work: b.workCancelDuplicate})
	river.AddWorker(w, &worker[finishJob]{b: b, work: b.workFinish})
	river.AddWorker(w, &worker[replyJob]{b: b, work: b.workReply})
	river.AddWorker(w, &worker[reactJob]{b: b, work: b.workReact})
	river.AddWorker(w, &worker[reapJob]{b: b, work: b.workReap})
	river.AddWorker(w, &worker[localRunJob]{b: b, work: b.workLocalRun, timeout: b.cfg.RunTimeout + 10*time.Minute})
	return w
}

func (b *Bot) periodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(b.cfg.ReapEvery),
		func() (river.JobArgs, *river.InsertOpts) { return reapJob{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "reap"})}
}

// workDelivery handles one stored delivery: GitHub reads first, then one
// transaction that marks the delivery handled and records the decision,
// so a job run twice decides once.
func (b *Bot) workDelivery(ctx context.Context, job *river.Job[state.DeliveryJob]) error {
	var d state.Delivery
	if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
		d, err = tx.Delivery(ctx, job.Args.Installation, job.Args.ID)
		return err
	}); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return river.JobCancel(err)
		}
		return err
	}
	if d.Handled {
		return nil
	}
	log := b.log.With("delivery", d.ID, "event", d.Event, "installation", d.Installation)
	h := &handling{bot: b, log: log, inst: d.Installation, delivery: d}
	apply, err := h.decide(ctx)
	var pe *PayloadError
	if errors.As(err, &pe) {
		log.Warn("payload does not decode; delivery dropped", "err", err)
		apply, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("delivery %s (%s): %w", d.ID, d.Event, err)
	}
	return b.state.Update(ctx, func(tx *state.Tx) error {
		first, err := tx.MarkHandled(ctx, d.Installation, d.ID)
		if err != nil || !first || apply == nil {
			return err
		}
		return apply(ctx, tx)
	})
}

// handling is one delivery being decided.
type handling struct {
	bot      *Bot
	log      *slog.Logger
	inst     int64
	delivery state.Delivery
}

// apply is a decision: it runs in the transaction that marks the delivery
// handled, re-reads what it depends on there, and records what changed.
type apply func(ctx context.Context, tx *state.Tx) error

// decide parses the delivery and reads from GitHub what the decision
// needs; the decision itself is the returned apply, nil for none.
func (h *handling) decide(ctx context.Context) (apply, error) {
	d := h.delivery
	switch d.Event {
	case "pull_request":
		return h.pullRequest(ctx)
	case "issue_comment":
		return h.issueComment(ctx)
	case "workflow_run":
		return h.workflowRun(ctx)
	case "check_run":
		return h.checkRun(ctx)
	case "check_suite":
		return h.checkSuite(ctx)
	case "installation", "installation_repositories":
		var ev struct {
			Action       string `json:"action"`
			Installation struct {
				ID      int64 `json:"id"`
				Account struct {
					Login string `json:"login"`
				} `json:"account"`
			} `json:"installation"`
		}
		if err := decode(d.Event, d.Payload, &ev); err != nil {
			return nil, err
		}
		h.log.Info("installation event acknowledged", "action", ev.Action, "account", ev.Installation.Account.Login)
		return nil, nil
	}
	h.log.Debug("event ignored")
	return nil, nil
}

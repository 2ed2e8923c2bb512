// Package bot makes pairbench's GitHub decisions: which pull requests to
// bench and at which commit, who may command it, which backend runs the
// bench, and what the pull request shows when the bench ends — one check
// run per bench, one sticky rollup comment, and one "bench: <label>" label.
//
// It is the only package that imports go-github. It receives verified
// webhook deliveries from package server (through cmd/pairbench, which
// converts server.Delivery to Delivery), and reads each run's report.json
// from the artifact store.
//
// Every delivery goes through the same steps, in order: the server has
// verified it; Handle parses it; ignores what is not for the bot (other
// actions, comments without /bench, repositories without .pairbench.yml);
// allows only who may act (trusted authors for automatic benches, users with
// write access for commands); reacts on the pull request; and hands the run
// to the Dispatcher, which works in the background under its own context.
package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench/artifacts"
)

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

// Events returns the webhook events Handle acts on (for server.Config.Events).
func Events() []string {
	return []string{"pull_request", "issue_comment", "workflow_run", "check_run", "installation", "installation_repositories"}
}

// PayloadError reports a delivery whose payload does not decode as its
// event.
type PayloadError struct {
	Event string
	Err   error
}

func (e *PayloadError) Error() string { return fmt.Sprintf("%s payload: %v", e.Event, e.Err) }
func (e *PayloadError) Unwrap() error { return e.Err }

// Config configures a Bot. Clients, Dispatcher and Store are required.
type Config struct {
	// Clients gives the GitHub client for an installation: AppClients for
	// the GitHub App, TokenClients for a plain token.
	Clients Clients
	// Dispatcher runs benches: Actions, or cmd/pairbench's local backend.
	Dispatcher Dispatcher
	// Store holds the runs; the bot reads <run id>/report.json there and
	// links <run id>/report.html.
	Store artifacts.Store
	// Workflow is the Actions workflow file whose workflow_run events end
	// benches; "" means DefaultWorkflow.
	Workflow string
	// Pairs and Model are the defaults for a bench; 0 and "" leave the choice
	// to the backend.
	Pairs int
	Model string
	// ReportTTL is how long the report link in the comment works; default
	// and maximum artifacts.MaxPresignTTL.
	ReportTTL time.Duration
	// RunTimeout is how long a bench may go without finishing before Reap
	// declares it vanished; default 6 hours.
	RunTimeout time.Duration
	// ProgressEvery is the shortest interval between two progress updates
	// of a check run (GitHub limits content writes); default 10 seconds.
	ProgressEvery time.Duration
	// Logger receives logs for work outside a delivery; default discard.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Bot handles webhook deliveries and the runs they start. It is safe for
// concurrent use.
type Bot struct {
	cfg Config
	log *slog.Logger

	mu   sync.Mutex
	runs map[RunID]*bench // benches not yet ended
	byPR map[prKey]RunID  // the bench running for each pull request
}

type prKey struct {
	repo string
	pr   int
}

// bench is a run the bot started and has not seen end.
type bench struct {
	req          Request
	check        checkRun
	by           string // who asked; "" for an automatic bench
	started      time.Time
	lastProgress time.Time
	done, total  int
}

// New checks cfg and returns a Bot.
func New(cfg Config) (*Bot, error) {
	if cfg.Clients == nil || cfg.Dispatcher == nil || cfg.Store == nil {
		return nil, errors.New("bot: Clients, Dispatcher and Store are required")
	}
	if cfg.Workflow == "" {
		cfg.Workflow = DefaultWorkflow
	}
	if cfg.ReportTTL <= 0 || cfg.ReportTTL > artifacts.MaxPresignTTL {
		cfg.ReportTTL = artifacts.MaxPresignTTL
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 6 * time.Hour
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Bot{cfg: cfg, log: cfg.Logger, runs: map[RunID]*bench{}, byPR: map[prKey]RunID{}}, nil
}

// Handle acts on one delivery. Events and actions the bot does not act on
// return nil. A payload that does not decode returns a *PayloadError;
// failures to reach GitHub or the dispatcher return wrapped errors, after
// whatever could be posted about them was.
func (b *Bot) Handle(ctx context.Context, d Delivery) error {
	log := d.Logger
	if log == nil {
		log = b.log
	}
	h := &handling{bot: b, log: log, inst: d.InstallationID}
	switch d.Event {
	case "pull_request":
		var ev github.PullRequestEvent
		if err := decode(d, &ev); err != nil {
			return err
		}
		h.setInstallation(ev.GetInstallation())
		return h.pullRequest(ctx, &ev)
	case "issue_comment":
		var ev github.IssueCommentEvent
		if err := decode(d, &ev); err != nil {
			return err
		}
		h.setInstallation(ev.GetInstallation())
		return h.issueComment(ctx, &ev)
	case "workflow_run":
		var ev github.WorkflowRunEvent
		if err := decode(d, &ev); err != nil {
			return err
		}
		h.setInstallation(ev.GetInstallation())
		return h.workflowRun(ctx, &ev)
	case "check_run":
		var ev github.CheckRunEvent
		if err := decode(d, &ev); err != nil {
			return err
		}
		h.setInstallation(ev.GetInstallation())
		return h.checkRun(ctx, &ev)
	case "installation", "installation_repositories":
		var ev struct {
			Action       string               `json:"action"`
			Installation *github.Installation `json:"installation"`
		}
		if err := decode(d, &ev); err != nil {
			return err
		}
		log.Info("installation event acknowledged", "action", ev.Action,
			"installation", ev.Installation.GetID(), "account", ev.Installation.GetAccount().GetLogin())
		return nil
	}
	log.Debug("event ignored", "event", d.Event)
	return nil
}

func decode(d Delivery, v any) error {
	if err := json.Unmarshal(d.Payload, v); err != nil {
		return &PayloadError{Event: d.Event, Err: err}
	}
	return nil
}

// handling is one delivery being handled.
type handling struct {
	bot  *Bot
	log  *slog.Logger
	inst int64
}

func (h *handling) setInstallation(i *github.Installation) {
	if h.inst == 0 {
		h.inst = i.GetID()
	}
}

func (h *handling) client(ctx context.Context) (*github.Client, error) {
	c, err := h.bot.cfg.Clients.Client(ctx, h.inst)
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", h.inst, err)
	}
	return c, nil
}

func repoOf(r *github.Repository, inst int64) Repo {
	return Repo{Owner: r.GetOwner().GetLogin(), Name: r.GetName(), DefaultBranch: r.GetDefaultBranch(), Installation: inst}
}

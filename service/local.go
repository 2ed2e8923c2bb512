package service

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/rundir"
)

// LocalRunner is the local backend: it runs the bot's benches on this
// host through the bench library, as `pairbench run` does. The bot's job
// queue runs them one at a time, and runs again with the same run id (which
// resumes it) a bench cut short by a shutdown or a crash.
type LocalRunner struct {
	template bench.Config
	gitURL   string
	log      *slog.Logger
}

var _ bot.Runner = (*LocalRunner)(nil)

// NewLocalRunner returns the local backend of o: benches like
// o.LocalBench, uploaded to o.Store, with o's pairs and model unless a
// bench asks for others, of the registry cloned from o.GitURL.
func NewLocalRunner(o Options, log *slog.Logger) *LocalRunner {
	t := o.LocalBench
	t.Store = o.Store
	if o.Pairs > 0 {
		t.Pairs = o.Pairs
	}
	if o.Model != "" {
		t.Model = o.Model
	}
	return &LocalRunner{template: t, gitURL: o.GitURL, log: log}
}

// Run runs the bench until it ends, handing progress the engine's
// progress (how many pairs are done of those in force, the look under way
// in a run of looks, the look that stopped the run) whenever one of them
// moves.
func (d *LocalRunner) Run(ctx context.Context, req bot.Request, progress func(rundir.Progress)) error {
	_, err := bench.Bench(ctx, d.config(req, progress))
	return err
}

// config is the bench of req.
func (d *LocalRunner) config(req bot.Request, progress func(rundir.Progress)) bench.Config {
	o := d.template
	o.RunID = string(req.RunID)
	o.Seed = 0 // a new run draws one; a resumed run keeps its own
	o.Registry = "."
	o.Git = &bench.Git{Repo: strings.NewReplacer("{owner}", req.Repo.Owner, "{repo}", req.Repo.Name).Replace(d.gitURL),
		Ref: req.HeadSHA, PR: req.PR, Cache: filepath.Join(o.RunsDir, ".git-cache")}
	o.Intents = req.Intents
	switch {
	case req.Base != "":
		// What the pull request changed since its base, each domain as
		// config.Comparisons chooses: the bench reads the diff in its git
		// cache, as the bot read it through the API. Named intents are
		// benched alone, each domain as its changes choose.
		o.Changes = req.Base
	case len(o.Intents) == 0:
		o.Intents = req.Domains
	}
	if req.Pairs > 0 {
		// The bench's pairs: a resume with more (/bench more) tops its
		// run up; with as many it carries on.
		o.Pairs, o.PairsGiven = req.Pairs, true
	}
	if req.Model != "" {
		o.Model = req.Model
	}
	if req.Agent != "" {
		o.Agent = req.Agent
	}
	o.Log = d.log.With("run", req.RunID)
	// The pairs in force: in a run of looks, those of the look under way,
	// so a run that stops at a look ends its count done, not short of the
	// pairs planned past it; the look, and the look that stopped the run.
	// The engine's slots wait on this, one call at a time: progress only
	// takes the progress (the bot writes it from a goroutine of its own).
	var last progressKey
	o.Hooks.Progress = func(p rundir.Progress) {
		if now := keyOf(p); now != last {
			last = now
			progress(p)
		}
	}
	return o
}

// progressKey is what the bot shows of a bench's progress: a progress
// with the same key is not handed on.
type progressKey struct {
	done, pairs, look, looks int
	stopped                  bool
}

func keyOf(p rundir.Progress) progressKey {
	return progressKey{done: p.Done, pairs: p.Pairs, look: p.Look, looks: p.Looks, stopped: p.Stop != nil}
}

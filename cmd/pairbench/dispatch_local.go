package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/runner"
)

// localDispatcher is the local backend: it runs the bot's benches on this
// host, one at a time, through the bench library as `pairbench run` does,
// and tells the bot how they go.
type localDispatcher struct {
	ctx      context.Context // the service's lifetime
	template bench.Config
	gitURL   string
	log      *slog.Logger
	bot      *bot.Bot

	turn    chan struct{} // one bench at a time
	mu      sync.Mutex
	cancels map[bot.RunID]context.CancelFunc
	wg      sync.WaitGroup
}

var _ bot.Dispatcher = (*localDispatcher)(nil)

func newLocalDispatcher(ctx context.Context, template bench.Config, gitURL string, log *slog.Logger) *localDispatcher {
	return &localDispatcher{ctx: ctx, template: template, gitURL: gitURL, log: log,
		turn: make(chan struct{}, 1), cancels: map[bot.RunID]context.CancelFunc{}}
}

// Dispatch queues the bench and returns.
func (d *localDispatcher) Dispatch(_ context.Context, req bot.Request) error {
	ctx, cancel := context.WithCancel(d.ctx)
	d.mu.Lock()
	d.cancels[req.RunID] = cancel
	d.mu.Unlock()
	d.wg.Go(func() {
		defer cancel()
		err := d.run(ctx, req)
		d.mu.Lock()
		delete(d.cancels, req.RunID)
		d.mu.Unlock()
		if ferr := d.bot.Finished(context.WithoutCancel(ctx), req.RunID, err); ferr != nil {
			d.log.Error("post the end of a bench", "run", req.RunID, "err", ferr)
		}
	})
	return nil
}

// Cancel stops a queued or running bench; an unknown one is not an error.
func (d *localDispatcher) Cancel(_ context.Context, req bot.Request) error {
	d.mu.Lock()
	cancel := d.cancels[req.RunID]
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// wait returns when every bench has ended (the service's context ending
// cancels them).
func (d *localDispatcher) wait() { d.wg.Wait() }

func (d *localDispatcher) run(ctx context.Context, req bot.Request) error {
	select {
	case d.turn <- struct{}{}:
		defer func() { <-d.turn }()
	case <-ctx.Done():
		return ctx.Err()
	}
	o := d.template
	o.RunID = string(req.RunID)
	o.Seed = uint64(time.Now().UnixNano())
	o.Registry = "."
	o.Git = &bench.Git{Repo: strings.NewReplacer("{owner}", req.Repo.Owner, "{repo}", req.Repo.Name).Replace(d.gitURL),
		Ref: req.HeadSHA, PR: req.PR, Cache: filepath.Join(o.RunsDir, ".git-cache")}
	o.Intents = req.Intents
	if len(o.Intents) == 0 {
		o.Intents = req.Domains
	}
	if req.Pairs > 0 {
		o.Pairs = req.Pairs
	}
	if req.Model != "" {
		o.Model = req.Model
	}
	o.Log = d.log.With("run", req.RunID)
	var stop func()
	o.Hooks.Progress, stop = d.followProgress(ctx, req.RunID, o.Log)
	defer stop()
	_, err := bench.Bench(ctx, o)
	return err
}

// followProgress returns a progress hook that tells the bot how many pairs
// are done whenever that number moves, from a goroutine of its own (the
// hook must not wait for GitHub), until stop is called.
func (d *localDispatcher) followProgress(ctx context.Context, id bot.RunID, log *slog.Logger) (hook func(runner.Progress), stop func()) {
	latest := make(chan runner.Progress, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range latest {
			if err := d.bot.Progress(ctx, id, p.Done, p.Pairs); err != nil && !errors.Is(err, bot.ErrUnknownRun) {
				log.Warn("report progress", "err", err)
			}
		}
	}()
	last := -1
	hook = func(p runner.Progress) {
		if p.Done == last {
			return
		}
		last = p.Done
		select { // keep only the newest count
		case <-latest:
		default:
		}
		latest <- p
	}
	return hook, func() { close(latest); <-done }
}

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/runner"
)

// localDispatcher is the local backend: it runs the bot's benches on this
// host, one at a time, through the same runBench as `pairbench run`, and
// tells the bot how they go.
type localDispatcher struct {
	ctx      context.Context // the service's lifetime
	template benchOptions
	gitURL   string
	log      *slog.Logger
	bot      *bot.Bot

	turn    chan struct{} // one bench at a time
	mu      sync.Mutex
	cancels map[bot.RunID]context.CancelFunc
	wg      sync.WaitGroup
}

var _ bot.Dispatcher = (*localDispatcher)(nil)

func newLocalDispatcher(ctx context.Context, template benchOptions, gitURL string, log *slog.Logger) *localDispatcher {
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
	o.GitRepo = strings.NewReplacer("{owner}", req.Repo.Owner, "{repo}", req.Repo.Name).Replace(d.gitURL)
	o.GitRef, o.PR, o.Registry = req.HeadSHA, req.PR, "."
	o.GitCache = filepath.Join(o.RunsDir, ".git-cache")
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
	log := d.log.With("run", req.RunID)
	stop := d.followProgress(ctx, req.RunID, filepath.Join(o.RunsDir, o.RunID), log)
	defer stop()
	_, err := runBench(ctx, o, log, io.Discard, io.Discard)
	return err
}

// followProgress reports the run's complete pairs to the bot every few
// seconds until stop is called.
func (d *localDispatcher) followProgress(ctx context.Context, id bot.RunID, dir string, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		last := -1
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			complete, total, ok := pairsDone(dir)
			if !ok || complete == last {
				continue
			}
			last = complete
			if err := d.bot.Progress(ctx, id, complete, total); err != nil && !errors.Is(err, bot.ErrUnknownRun) {
				log.Warn("report progress", "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// pairsDone counts the complete pairs of the run in dir against its plan.
func pairsDone(dir string) (complete, total int, ok bool) {
	run := runner.RunDir{Path: dir}
	plan, err := run.ReadPlan()
	if err != nil {
		return 0, 0, false
	}
	for _, in := range plan.Intents {
		total += len(in.Pairs)
	}
	rows, err := run.ReadRowsFile(runner.RowsFile, nil)
	if err != nil {
		return 0, total, false
	}
	return total - len(runner.Pending(planPairs(plan), rows)), total, true
}

func planPairs(p *runner.Plan) []runner.PairSpec {
	var out []runner.PairSpec
	for _, in := range p.Intents {
		for _, pp := range in.Pairs {
			out = append(out, runner.PairSpec{Intent: in.ID, Domain: in.Domain, Pair: pp.Pair, Order: pp.Order})
		}
	}
	return out
}

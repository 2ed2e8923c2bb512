package bot

import (
	"context"
	"sync"
	"time"

	"github.com/pairbench/pairbench/rundir"
)

// progressWriteTimeout bounds one write of a local bench's progress.
const progressWriteTimeout = 5 * time.Second

// progressSlot takes a local bench's progress from the engine's hook
// without ever blocking it: the engine's slots wait on the hook, one call
// at a time, so the hook only keeps the latest progress, and a goroutine
// of the slot's own writes the latest there is, each write bounded by
// progressWriteTimeout. A slow or stalled database delays the record of
// progress (what came in between is skipped), never a trial.
type progressSlot struct {
	write func(ctx context.Context, p rundir.Progress)
	wake  chan struct{}

	mu      sync.Mutex
	latest  rundir.Progress
	pending bool
}

func newProgressSlot(write func(ctx context.Context, p rundir.Progress)) *progressSlot {
	return &progressSlot{write: write, wake: make(chan struct{}, 1)}
}

// report is the engine's hook: it keeps p and returns.
func (p *progressSlot) report(pr rundir.Progress) {
	p.mu.Lock()
	p.latest, p.pending = pr, true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run writes what report keeps until ctx ends, then what is still pending
// once more, and returns.
func (p *progressSlot) run(ctx context.Context) {
	for {
		select {
		case <-p.wake:
			p.flush(ctx)
		case <-ctx.Done():
			p.flush(context.WithoutCancel(ctx))
			return
		}
	}
}

func (p *progressSlot) flush(ctx context.Context) {
	p.mu.Lock()
	latest, pending := p.latest, p.pending
	p.pending = false
	p.mu.Unlock()
	if !pending {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, progressWriteTimeout)
	defer cancel()
	p.write(ctx, latest)
}

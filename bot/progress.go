package bot

import (
	"context"
	"sync"
	"time"
)

// progressWriteTimeout bounds one write of a local bench's progress.
const progressWriteTimeout = 5 * time.Second

// progressSlot takes a local bench's progress from the engine's hook
// without ever blocking it: the engine calls the hook under its lock, so
// the hook only keeps the latest count, and a goroutine of the slot's own
// writes the latest count there is, each write bounded by
// progressWriteTimeout. A slow or stalled database delays the record of
// progress (counts in between are skipped), never a trial.
type progressSlot struct {
	write func(ctx context.Context, done, total int)
	wake  chan struct{}

	mu          sync.Mutex
	done, total int
	pending     bool
}

func newProgressSlot(write func(ctx context.Context, done, total int)) *progressSlot {
	return &progressSlot{write: write, wake: make(chan struct{}, 1)}
}

// report is the engine's hook: it keeps done and total and returns.
func (p *progressSlot) report(done, total int) {
	p.mu.Lock()
	p.done, p.total, p.pending = done, total, true
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
	done, total, pending := p.done, p.total, p.pending
	p.pending = false
	p.mu.Unlock()
	if !pending {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, progressWriteTimeout)
	defer cancel()
	p.write(ctx, done, total)
}

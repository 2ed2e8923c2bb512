package sandbox

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// A sandbox can make refusals (and upstream failures) as fast as the proxy
// answers them, each naming what it chose (a Host of up to a MiB): a log
// line for each, quoting it whole, filled the launcher's log (a runner's
// stderr, a service's journal) without bound. So the log quotes at most
// refusalLogMax bytes of anything the sandbox sent (ClipForLog), and an
// egress logs its first refusalLogBurst refusals one by one, then at most
// one line per refusalLogEvery saying how many more there were, and one at
// Close (RefusalLog). The browser's DevTools guard, which refuses what the
// agent's sandbox sends it, logs the same way.
const (
	refusalLogMax   = 512
	refusalLogBurst = 100
	refusalLogEvery = 10 * time.Second
)

// ClipForLog returns s cut to 512 bytes, saying how long it was: what a
// log record may quote of anything a sandbox sent.
func ClipForLog(s string) string {
	if len(s) <= refusalLogMax {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:refusalLogMax], ""), len(s))
}

// RefusalLog counts the refusals of one gate (an egress, a DevTools guard)
// and the failures a sandbox can provoke there, and decides which are
// logged: the first 100 one by one, then a line every 10 s counting the
// rest.
type RefusalLog struct {
	log      *slog.Logger
	what     string // the gate, as its log lines name it
	mu       sync.Mutex
	n        int       // refusals so far
	unlogged int       // of them, not logged one by one nor summed up yet
	summed   time.Time // when unlogged was last summed up
}

// NewRefusalLog returns the refusal log of the gate named what, logging
// to log.
func NewRefusalLog(log *slog.Logger, what string) *RefusalLog {
	return &RefusalLog{log: log, what: what}
}

// Count counts one refusal and reports whether to log it line by line; it
// logs the sum of the unlogged ones itself when 10 s have passed.
func (l *RefusalLog) Count() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if l.n <= refusalLogBurst {
		return true
	}
	l.unlogged++
	switch {
	case l.n == refusalLogBurst+1:
		l.log.Warn(l.what+" refusals from now on are only counted, a line every 10 s", "total", l.n)
		l.unlogged, l.summed = 0, time.Now()
	case time.Since(l.summed) >= refusalLogEvery:
		l.flushLocked()
	}
	return false
}

// Flush logs how many refusals were not logged one by one, if any.
func (l *RefusalLog) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func (l *RefusalLog) flushLocked() {
	if l.unlogged == 0 {
		return
	}
	l.log.Warn(l.what+" refusals not logged one by one", "more", l.unlogged, "total", l.n)
	l.unlogged, l.summed = 0, time.Now()
}

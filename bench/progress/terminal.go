package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"
)

// Terminal keeps a block of status lines at the bottom of a terminal. Text
// written to it (log records) scrolls above the block. It is safe for
// concurrent use.
type Terminal struct {
	mu    sync.Mutex
	w     io.Writer
	fd    int
	lines []string // the block as drawn
	done  bool
}

// NewTerminal returns a Terminal on w when w is a terminal, else nil.
func NewTerminal(w io.Writer) *Terminal {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &Terminal{w: w, fd: int(f.Fd())}
}

// Output returns where log records of format ("text" or "json") go:
// through a Terminal when w is a terminal and records are text, else w
// itself (t is then nil).
func Output(w io.Writer, format string) (out io.Writer, t *Terminal) {
	if format != "text" {
		return w, nil
	}
	if t = NewTerminal(w); t == nil {
		return w, nil
	}
	return t, t
}

// Width is how many runes a line of the block may hold (0: unknown).
func (t *Terminal) Width() int {
	w, _, err := term.GetSize(t.fd)
	if err != nil || w <= 1 {
		return 0
	}
	return w - 1 // never the last column, which wraps on some terminals
}

// clear erases the drawn block; the cursor ends where it began.
func (t *Terminal) clear() {
	if n := len(t.lines); n > 0 {
		fmt.Fprint(t.w, "\r"+strings.Repeat("\x1b[1A\x1b[2K", n))
	}
}

func (t *Terminal) draw() {
	if len(t.lines) > 0 {
		fmt.Fprint(t.w, strings.Join(t.lines, "\n")+"\n")
	}
}

// Write prints b above the block.
func (t *Terminal) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clear()
	n, err := t.w.Write(b)
	t.draw()
	return n, err
}

// Set replaces the block; after Stop it does nothing.
func (t *Terminal) Set(lines []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	t.clear()
	t.lines = lines
	t.draw()
}

// Stop leaves the last block on screen as ordinary output.
func (t *Terminal) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	t.lines = nil
}

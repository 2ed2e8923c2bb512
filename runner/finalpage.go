package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
)

// PageReader is implemented by a Browser that can read the page the agent
// left from a world the page's scripts cannot reach: what an intent's hard
// checks test and its judge is shown.
type PageReader interface {
	// PageState reads the current page (the tab opened last that is still
	// open) and, for each selector, its first match.
	PageState(ctx context.Context, selectors []string) (pairbench.PageState, error)
}

// TrialPage is the page the agent left, as read for the intent's checks
// and its judge (pairbench.PageState); written only for intents that read
// it.
const TrialPage = "page.json"

// pageTimeout bounds reading the final page.
const pageTimeout = 15 * time.Second

// readsPage reports whether the intent's trials read the final page: it
// has checks, or a judge is shown the page.
func (in *TrialIntent) readsPage() bool {
	return len(in.Intent.Checks) > 0 || in.Intent.Judged()
}

// ErrNoPageReader is the final page step's error when the intent reads the
// final page and the browser is no PageReader.
var ErrNoPageReader = errors.New("this browser provider cannot read the final page, which the intent's checks or judge need")

// finalPage reads the page the agent left, for an intent that reads it,
// and writes it to the trial's page.json. It returns nil for an intent that
// does not. The error (ErrNoPageReader, or the reader's, wrapped) is why
// the page cannot be read: the trial then says nothing about the agent.
func (tr *trial) finalPage(ctx context.Context, b Browser) (*pairbench.PageState, error) {
	if !tr.in.readsPage() {
		return nil, nil
	}
	r, ok := b.(PageReader)
	if !ok {
		return nil, ErrNoPageReader
	}
	pctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	st, err := r.PageState(pctx, grade.Selectors(tr.in.Intent.Checks))
	if err != nil {
		return nil, fmt.Errorf("final page: %w", err)
	}
	tr.t.save(filepath.Join(tr.dir, TrialPage), st)
	return &st, nil
}

package runner

import (
	"context"
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

// finalPage reads the page the agent left, for an intent that reads it,
// and writes it to the trial's page.json. It returns nil for an intent that
// does not; why is the abort reason when the page cannot be read (the
// trial then says nothing about the agent).
func (t *Trials) finalPage(ctx context.Context, b Browser, in *TrialIntent, dir string) (page *pairbench.PageState, why string) {
	if !in.readsPage() {
		return nil, ""
	}
	r, ok := b.(PageReader)
	if !ok {
		return nil, "this browser provider cannot read the final page, which the intent's checks or judge need"
	}
	pctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	st, err := r.PageState(pctx, grade.Selectors(in.Intent.Checks))
	if err != nil {
		return nil, "final page: " + err.Error()
	}
	t.save(filepath.Join(dir, TrialPage), st)
	return &st, ""
}

package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
)

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
// does not. The error (the browser's, wrapped) is why the page cannot be
// read: the trial then says nothing about the agent.
func (tr *trial) finalPage(ctx context.Context, b Browser) (*pairbench.PageState, error) {
	if !tr.in.readsPage() {
		return nil, nil
	}
	pctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	st, err := b.PageState(pctx, grade.Selectors(tr.in.Intent.Checks))
	if err != nil {
		return nil, fmt.Errorf("final page: %w", err)
	}
	tr.t.save(filepath.Join(tr.dir, TrialPage), st)
	return &st, nil
}

package bench

import (
	"context"
	"fmt"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
)

// checkToolFree is the smoke gate's check of --webmcp native: every start
// page an arm without tools opens (control's, as a rule) must be tool-free
// as the browser's own WebMCP sees it, or every trial of that arm would
// end in a harness error. A browser setup of that arm per start page (and
// profile) says so before anything is frozen. In polyfill mode it checks
// nothing: the page's own tools are recorded in both arms instead.
func (r *Run) checkToolFree(ctx context.Context, tis []*runner.TrialIntent) error {
	if r.plan.WebMCPMode() != pairbench.WebMCPNative {
		return nil
	}
	type page struct{ url, profile string }
	seen := map[page]bool{}
	for _, ti := range tis {
		for _, arm := range pairbench.Arms {
			p := page{ti.Intent.StartURL, ti.Browser.Profile}
			if len(ti.ArmTools(arm)) > 0 || seen[p] {
				continue
			}
			seen[p] = true
			setup, err := runner.SetUpBrowser(ctx, r.log, r.trials.Browsers, runner.SetupSpec{Arm: arm,
				StartURL: ti.Intent.StartURL, Browser: ti.Browser})
			if err != nil {
				return fmt.Errorf("intent %s, %s setup (--webmcp native): %w", ti.Intent.ID, arm, err)
			}
			setup.Browser.Close(ctx)
		}
	}
	return nil
}

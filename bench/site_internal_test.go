package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

// demoRun copies the demo run's plan and rows (172 pairs) into a new run
// directory.
func demoRun(t *testing.T) rundir.RunDir {
	t.Helper()
	run := rundir.RunDir{Path: t.TempDir()}
	for _, f := range []string{rundir.PlanFile, rundir.RowsFile} {
		b, err := os.ReadFile(filepath.Join("../examples/runs/demo", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(run.File(f), b, 0o644))
	}
	return run
}

// TestSiteDeferredPastItsPairs: a run of more pairs than the site is
// written up front for gets its report and no site, an earlier site
// removed, with the same report files; viewing it and publishing it write
// the site, so a store gets every page.
func TestSiteDeferredPastItsPairs(t *testing.T) {
	run := demoRun(t)
	read := func() map[string]string {
		files := map[string]string{}
		for _, f := range rundir.PublishLast {
			b, err := os.ReadFile(run.File(f))
			require.NoError(t, err)
			files[f] = string(b)
		}
		return files
	}
	rep, err := writeReport(run, run, rundir.ReportOptions{}, siteAlways)
	require.NoError(t, err)
	require.False(t, rep.SiteDeferred)
	require.FileExists(t, run.File(viewer.IntentPage("books-cheapest-by-author")))
	withSite := read()

	rep, err = writeReport(run, run, rundir.ReportOptions{}, 171)
	require.NoError(t, err)
	assert.True(t, rep.SiteDeferred, "172 pairs are past 171")
	assert.NoDirExists(t, run.File(viewer.IntentsDir), "the earlier report's site would show older rows")
	assert.Equal(t, withSite, read(), "the report files do not depend on the site")

	rep, err = writeReport(run, run, rundir.ReportOptions{}, 172)
	require.NoError(t, err)
	assert.False(t, rep.SiteDeferred, "172 pairs are not past 172")
	require.NoError(t, os.RemoveAll(run.File(viewer.IntentsDir)))

	_, err = ReportForViewing(run, false)
	require.NoError(t, err)
	assert.FileExists(t, run.File(viewer.IntentPage("books-cheapest-by-author")), "view writes a deferred site")
	require.NoError(t, os.RemoveAll(run.File(viewer.IntentsDir)))

	storeDir := t.TempDir()
	store, err := artifacts.NewLocal(storeDir)
	require.NoError(t, err)
	_, err = Publish(context.Background(), store, "demo", run, time.Hour)
	require.NoError(t, err)
	for _, f := range []string{viewer.IntentPage("books-cheapest-by-author"), rundir.ReportHTML} {
		assert.FileExists(t, filepath.Join(storeDir, "demo", f), "a published report has its site")
	}
}

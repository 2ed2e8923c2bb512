package viewer_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/internal/fulldisk"
	"github.com/pairbench/pairbench/rundir"
)

// TestReportOnAFullDisk writes a run's report and site into a directory on
// a small filesystem that is full: the report fails saying why, leaves no
// temporary file behind, and once there is space again is written whole.
func TestReportOnAFullDisk(t *testing.T) {
	run := fakeRun{intents: 2, pairs: 3, trials: true}.write(t, t.TempDir())
	disk := fulldisk.Mount(t, 1<<20)
	out := rundir.RunDir{Path: disk}
	filler := fulldisk.Fill(t, disk)

	_, err := bench.WriteReport(run, out, "")
	require.Error(t, err)
	assert.ErrorContains(t, err, "no space left on device")
	assert.Empty(t, fulldisk.Temps(t, disk), "a page that did not fit leaves no temporary file")

	require.NoError(t, os.Remove(filler))
	rep, err := bench.WriteReport(run, out, "")
	require.NoError(t, err)
	assert.Len(t, rep.Paths, 3)
	assert.Len(t, sitePages(t, out), 1+2+2*3, "the run page, a page per intent, a page per pair")
	assert.Empty(t, fulldisk.Temps(t, disk))
}

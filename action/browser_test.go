package action

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestActionBrowserInputs runs the Action with browser: kernel and no
// KERNEL_API_KEY in the job's environment: pairbench's one line fails the
// step before anything is planned, so the input reached --browser. A value
// that is no provider at all, or a cdp-config outside the workspace's
// files, is refused by the Action itself.
func TestActionBrowserInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs pairbench through the Action; not in -short")
	}
	b := newBench(t)
	noStore := map[string]string{"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": "", "example-sites": ""}
	with := func(extra map[string]string) map[string]string {
		in := b.inputs(noStore)
		for k, v := range extra {
			in[k] = v
		}
		return in
	}

	res, err := b.run("kernel", with(map[string]string{"browser": "kernel", "stealth": "true", "run-id": "gh-kernel"}))
	require.NoError(t, err)
	assert.True(t, res.Failed)
	assert.Contains(t, res.Log, "::error title=pairbench::pairbench run failed (exit 2): kernel: no API key (set KERNEL_API_KEY)")
	_, err = os.Stat(filepath.Join(res.Temp, "pairbench-action", "runs", "gh-kernel", "run.json"))
	assert.True(t, os.IsNotExist(err), "no plan without the key")

	hostile, err := b.run("hostile", with(map[string]string{"browser": "kernel --pairs 1000", "run-id": "gh-hostile"}))
	require.NoError(t, err)
	assert.True(t, hostile.Failed)
	assert.Contains(t, hostile.Log, "input browser is not valid: want local, kernel or cdp")

	missing, err := b.run("missing", with(map[string]string{"browser": "cdp", "cdp-config": "no/such.json", "run-id": "gh-missing"}))
	require.NoError(t, err)
	assert.True(t, missing.Failed)
	assert.Contains(t, missing.Log, "cdp-config no/such.json is not a file in the workspace")
}

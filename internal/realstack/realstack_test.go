package realstack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/local"
)

// recorder is a test that notes what Need made of it instead of ending.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...) }

// noChromium finds every part but Chromium.
func noChromium(p Part) error {
	if p == Chromium {
		return errors.New("Chromium is not installed at /nowhere")
	}
	return nil
}

func TestShortLaneSkipsNamingWhatIsNeededAndMissing(t *testing.T) {
	r := &recorder{}
	need(r, true, noChromium, []Part{Bubblewrap, Chromium})
	assert.Equal(t, "needs bubblewrap and Chromium (the real stack): not in the -short lane; missing here: Chromium is not installed at /nowhere", r.skipped)
	assert.Empty(t, r.failed)

	r = &recorder{}
	need(r, true, func(Part) error { return nil }, nil)
	assert.Equal(t, "needs bubblewrap, Chromium and the pinned Node tools (the real stack): not in the -short lane", r.skipped)
}

func TestFullLaneFailsOnWhatSetupShouldHaveInstalled(t *testing.T) {
	r := &recorder{}
	need(r, false, noChromium, []Part{NodeTools, Chromium})
	assert.Empty(t, r.skipped, "a missing install step is a failure in the full lane, never a skip")
	assert.Equal(t, "Chromium is not installed at /nowhere (scripts/setup.sh installs it: run `make setup`)", r.failed)

	r = &recorder{}
	need(r, false, func(Part) error { return nil }, nil)
	assert.Empty(t, r.skipped)
	assert.Empty(t, r.failed)
}

func TestChecksFindTheCheckoutsParts(t *testing.T) {
	assert.Equal(t, local.DefaultChromiumPath, ChromiumPath)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "..", "..", "tools", "node_modules"), NodeModules(t))
	assert.ErrorContains(t, check("GPU"), `unknown part "GPU"`)
	if !testing.Short() {
		for _, p := range []Part{Bubblewrap, Chromium, NodeTools, S3Server, Actionlint} {
			assert.NoError(t, check(p), "scripts/setup.sh installs %s", p)
		}
	}
}

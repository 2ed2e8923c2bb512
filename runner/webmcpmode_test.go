package runner

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// TestPlanRecordsItsWebMCPMode: a new plan records its mode (the polyfill
// when none is asked for), a run.json from before reads as the polyfill,
// another mode is a change, and an unknown one is refused.
func TestPlanRecordsItsWebMCPMode(t *testing.T) {
	reg := loadExamples(t)
	p, _, err := NewPlan(reg, planOpts())
	require.NoError(t, err)
	assert.Equal(t, pairbench.WebMCPPolyfill, p.WebMCP, "written out, not left to a default")
	enc, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(enc), `"webmcp":"polyfill"`)

	native := planOpts()
	native.WebMCP = pairbench.WebMCPNative
	n, _, err := NewPlan(reg, native)
	require.NoError(t, err)
	assert.Equal(t, pairbench.WebMCPNative, n.WebMCPMode())
	assert.Equal(t, []string{"webmcp: polyfill → native"}, p.Changes(n))

	old := *p
	old.WebMCP = ""
	assert.Equal(t, pairbench.WebMCPPolyfill, old.WebMCPMode(), "a run.json from before ran the polyfill")
	assert.Empty(t, old.Changes(p))
	require.NoError(t, old.Validate())

	bad := *p
	bad.WebMCP = "builtin"
	assert.ErrorContains(t, bad.Validate(), `unknown webmcp "builtin"`)
}

// TestNativeControlIsCheckedToolFree: in native mode an arm that registers
// nothing fails on a page whose tools the browser lists, in any frame,
// with a harness error naming them; in polyfill mode, or where the
// browser lists none, it passes.
func TestNativeControlIsCheckedToolFree(t *testing.T) {
	native := &pairbench.WebMCPEnv{Mode: pairbench.WebMCPNative, FrameTools: map[string][]string{"F2": {"chat"}, "F1": {"shop_hours", "search"}}}
	err := checkToolFree(pairbench.Control, "http://a.test/", native)
	var pt *PageToolsError
	require.ErrorAs(t, err, &pt)
	assert.Equal(t, "harness error: control's start page http://a.test/ has tools of its own in the browser's WebMCP (shop_hours, search in frame F1; chat in frame F2), which --webmcp native offers the agent; control would not be tool-free (bench this site with --webmcp polyfill, or a start page without tools)", err.Error())

	assert.NoError(t, checkToolFree(pairbench.Control, "http://a.test/", &pairbench.WebMCPEnv{Mode: pairbench.WebMCPNative, FrameTools: map[string][]string{"F1": {}}}))
	polyfill := *native
	polyfill.Mode = pairbench.WebMCPPolyfill
	assert.NoError(t, checkToolFree(pairbench.Control, "http://a.test/", &polyfill))
	assert.NoError(t, checkToolFree(pairbench.Control, "http://a.test/", nil))
}

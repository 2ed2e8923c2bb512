package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// TestNativeWebMCPIsUsedAndRecorded benches on browsers with WebMCP built
// in, as Kernel's are (here Chromium with WebMCPTesting behind the fake):
// both arms' setups record it, treatment's tools register through it and
// run, and control stays tool-free. Browsers without it record false.
func TestNativeWebMCPIsUsedAndRecorded(t *testing.T) {
	hosts := exampleHosts(t)
	reg, err := intents.Load("../../examples/registry")
	require.NoError(t, err)
	tools := reg.Domain("books.example").Registered()

	for _, native := range []bool{true, false} {
		var flags []string
		impl := pairbench.WebMCPPolyfill
		if native {
			flags = []string{"--enable-features=WebMCPTesting"}
			impl = pairbench.WebMCPNative
		}
		p := newProvider(t, kerneltest.Start(t, hosts, flags))

		treat, err := runner.SetUpBrowser(t.Context(), quiet, p, runner.SetupSpec{Arm: pairbench.Treatment,
			StartURL: "http://books.example/", Tools: tools, EntryTool: "find_books"})
		require.NoError(t, err, "native=%v", native)
		assert.Equal(t, native, treat.NativeWebMCP)
		assert.Equal(t, impl, treat.WebMCP, "what the trial's row records")
		res, err := treat.Browser.InvokeTool(t.Context(), "find_books", []byte(`{"query":"poetry"}`))
		require.NoError(t, err)
		assert.Empty(t, res.Exception, "native=%v", native)
		assert.True(t, res.Registered)
		require.NoError(t, treat.Browser.Close(t.Context()))

		ctl, err := runner.SetUpBrowser(t.Context(), quiet, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/"})
		require.NoError(t, err)
		assert.Equal(t, native, ctl.NativeWebMCP)
		assert.Equal(t, impl, ctl.WebMCP)
		live, err := ctl.Browser.LiveTools(t.Context())
		require.NoError(t, err)
		assert.Empty(t, live, "control is tool-free, native=%v", native)
		require.NoError(t, ctl.Browser.Close(t.Context()))
	}
}

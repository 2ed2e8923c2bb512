package driver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// setUp runs runner.SetUpBrowser against real Chromium. The browser lives
// as long as the test's context, as a trial's lives as long as the trial's.
func setUp(t *testing.T, browsers runner.Browsers, spec runner.SetupSpec) (*runner.Setup, error) {
	t.Helper()
	setup, err := runner.SetUpBrowser(t.Context(), quiet, browsers, spec)
	if err == nil {
		t.Cleanup(func() { setup.Browser.Close(context.Background()) })
	}
	return setup, err
}

func TestBothArmsRecordThePagesOwnTools(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site)

	treatment, err := setUp(t, p, runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/hours",
		Tools: testsite.BookTools(t), EntryTool: "find_books",
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"shop_hours"}, treatment.Native)
	assert.Empty(t, treatment.Failures)
	assert.Positive(t, treatment.Timing.Open)
	assert.Positive(t, treatment.Timing.Register)
	assert.Positive(t, treatment.Timing.Load)

	control, err := setUp(t, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/hours"})
	require.NoError(t, err)
	assert.Equal(t, []string{"shop_hours"}, control.Native)
	assert.Zero(t, control.Timing.Register, "control registers nothing")

	live, err := control.Browser.LiveTools(context.Background())
	require.NoError(t, err)
	require.Len(t, live, 1)
	assert.False(t, live[0].Registered)

	res, err := control.Browser.InvokeTool(context.Background(), "shop_hours", nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"open":"9-17"}`, res.Text)
	assert.False(t, res.Registered)
}

func TestControlSeesNoCustomTool(t *testing.T) {
	site := testsite.New(t)
	setup, err := setUp(t, newProvider(t, site), runner.SetupSpec{
		Arm: pairbench.Control, StartURL: "http://books.test/",
	})
	require.NoError(t, err)
	live, err := setup.Browser.LiveTools(context.Background())
	require.NoError(t, err)
	assert.Empty(t, live)
	assert.Empty(t, setup.Native)
}

// leakyBrowsers opens browsers that already carry custom tools, as a cloud
// browser whose profile kept an earlier registration would.
type leakyBrowsers struct {
	runner.Browsers
	tools []intents.Tool
}

func (l leakyBrowsers) Open(ctx context.Context, spec runner.BrowserSpec) (runner.Browser, error) {
	b, err := l.Browsers.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := b.RegisterTools(ctx, l.tools); err != nil {
		b.Close(ctx)
		return nil, err
	}
	return b, nil
}

func TestControlAbortsWhenACustomToolIsLive(t *testing.T) {
	site := testsite.New(t)
	browsers := leakyBrowsers{Browsers: newProvider(t, site), tools: testsite.BookTools(t)}
	_, err := setUp(t, browsers, runner.SetupSpec{
		Arm: pairbench.Control, StartURL: "http://books.test/", Attempts: 1,
	})
	var setupErr *runner.SetupError
	require.ErrorAs(t, err, &setupErr)
	assert.Contains(t, setupErr.Reason(), "already has custom tools: explode, find_books, out_of_stock")
}

func TestTreatmentAbortsWhenTheEntryToolIsNotLive(t *testing.T) {
	site := testsite.New(t)
	_, err := setUp(t, newProvider(t, site), runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/",
		Tools: testsite.BookTools(t), EntryTool: "weather_now", Attempts: 1,
	})
	var setupErr *runner.SetupError
	require.ErrorAs(t, err, &setupErr)
	assert.Equal(t,
		"entry tool weather_now is not live on http://books.test/ (registered tools live: explode, find_books, out_of_stock)",
		setupErr.Reason())
}

func TestStalledStartPageAbortsAfterThreeBrowsers(t *testing.T) {
	for _, path := range []string{"/stall", "/trickle"} {
		t.Run(path, func(t *testing.T) {
			site := testsite.New(t)
			// Long enough for each navigation's request to reach the site
			// on a busy machine; every one stalls there.
			p := newProvider(t, site, func(c *LocalConfig) { c.ParseTimeout = 2 * time.Second })
			url := "http://books.test" + path
			_, err := setUp(t, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: url})
			var setupErr *runner.SetupError
			require.ErrorAs(t, err, &setupErr)
			require.Len(t, setupErr.Failures, runner.DefaultSetupAttempts)
			for _, f := range setupErr.Failures {
				assert.Equal(t, "load "+url+": start page stalled: not parsed within 2s (navigated twice)", f)
			}
			assert.Equal(t, setupErr.Failures[2], setupErr.Reason())
			// Every browser asked; whether a second request arrives before
			// the browser is discarded depends on the machine's load.
			assert.GreaterOrEqual(t, site.Stalls.Load(), int32(runner.DefaultSetupAttempts))
		})
	}
}

func TestStalledFirstNavigationIsMadeOnceMore(t *testing.T) {
	site := testsite.New(t)
	// The first navigation runs out its wait; the second must parse within
	// the same wait, on a slow machine too.
	const wait = 10 * time.Second
	p := newProvider(t, site, func(c *LocalConfig) { c.ParseTimeout = wait })
	setup, err := setUp(t, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/flaky"})
	require.NoError(t, err)
	assert.Equal(t, 2, setup.Load.Navigations)
	assert.Empty(t, setup.Failures, "the same browser recovered")
	assert.GreaterOrEqual(t, setup.Load.Parsed, wait, "the first navigation's wait counts")
	assert.Equal(t, "http://books.test/flaky", setup.Load.URL)
}

package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/kernel"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/browser/remote"
	"github.com/pairbench/pairbench/runner"
)

// treatment is a treatment setup on the example bookshop.
func (f *fixture) treatment() runner.SetupSpec {
	return runner.SetupSpec{Arm: pairbench.Treatment, StartURL: "http://books.example/", Tools: f.tools, EntryTool: "find_books"}
}

// eventually waits up to 20s for cond.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 50*time.Millisecond, msg)
}

func TestSlowCreateOutlivingItsTrialIsDeleted(t *testing.T) {
	f := newFixture(t)
	f.fake.SetFaults(kerneltest.Faults{CreateDelay: 1500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := f.provider.Open(ctx, runner.BrowserSpec{})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Kernel makes the browser anyway; the provider deletes it once it
	// learns of it.
	eventually(t, func() bool { return f.fake.Deletes() == 1 && len(f.provider.Live()) == 0 }, "the late browser is deleted")
	assert.Len(t, f.fake.Creates(), 1)
	assert.Empty(t, f.fake.Live())
	assert.Empty(t, f.provider.Live())
}

func TestShutdownDeletesBrowsersInCreation(t *testing.T) {
	f := newFixture(t)
	f.fake.SetFaults(kerneltest.Faults{CreateDelay: 2 * time.Second})
	opened := make(chan error, 2)
	for range 2 {
		go func() {
			b, err := f.provider.Open(context.Background(), runner.BrowserSpec{})
			if err == nil {
				b.Close(context.Background())
				err = errors.New("opened a browser during shutdown")
			}
			opened <- err
		}()
	}
	eventually(t, func() bool { return len(f.fake.Creates()) == 2 }, "both creates are under way")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, f.provider.Close(ctx))
	// Close returned only once both browsers existed and were deleted.
	assert.Empty(t, f.fake.Live())
	assert.Equal(t, 2, f.fake.Deletes())
	for range 2 {
		err := <-opened
		assert.ErrorContains(t, err, "closed")
	}
	_, err := f.provider.Open(t.Context(), runner.BrowserSpec{})
	assert.ErrorContains(t, err, "closed", "no browser opens after shutdown")
	assert.Len(t, f.fake.Creates(), 2)
}

func TestFailedDeleteStaysTrackedAndIsRetried(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	b, err := f.provider.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	first := f.fake.Live()
	f.fake.SetFaults(kerneltest.Faults{FailDeletes: 1})
	err = b.Close(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "delete browser "+first[0])
	assert.Contains(t, err.Error(), "HTTP 500")
	assert.Equal(t, first, f.fake.Live(), "the browser lives on at Kernel")
	assert.Equal(t, first, f.provider.Live(), "and stays tracked")

	// The next Open retries it.
	b2, err := f.provider.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	eventually(t, func() bool { return !contains(f.fake.Live(), first[0]) }, "the failed delete is retried")
	require.NoError(t, b2.Close(ctx))
	assert.Empty(t, f.fake.Live())
	assert.Empty(t, f.provider.Live())
}

func TestShutdownRetriesFailedDeletes(t *testing.T) {
	f := newFixture(t)
	b, err := f.provider.Open(t.Context(), runner.BrowserSpec{})
	require.NoError(t, err)
	f.fake.SetFaults(kerneltest.Faults{FailDeletes: 2})
	require.Error(t, b.Close(t.Context()))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, f.provider.Close(ctx), "the second failure is retried too")
	assert.Empty(t, f.fake.Live())

	// A delete that never succeeds is named when shutdown gives up.
	g := newFixture(t)
	b, err = g.provider.Open(t.Context(), runner.BrowserSpec{})
	require.NoError(t, err)
	id := g.fake.Live()[0]
	g.fake.SetFaults(kerneltest.Faults{FailDeletes: 1000})
	require.Error(t, b.Close(t.Context()))
	short, cancel2 := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel2()
	err = g.provider.Close(short)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "could not delete browser(s) "+id)
	g.fake.SetFaults(kerneltest.Faults{})
}

func TestExpiredBrowserIsReplacedBySetup(t *testing.T) {
	f := newFixture(t)
	f.fake.SetFaults(kerneltest.Faults{ExpireOnCreate: 1})
	setup, err := runner.SetUpBrowser(t.Context(), quiet, f.provider, f.treatment())
	require.NoError(t, err)
	defer setup.Browser.Close(t.Context())
	require.Len(t, setup.Failures, 1)
	assert.Contains(t, setup.Failures[0], "connect over CDP")
	assert.NotContains(t, setup.Failures[0], "jwt", "the browser's URL is never quoted")
	assert.Len(t, f.fake.Live(), 1, "the expired browser was deleted")
}

func TestBrowserExpiringMidTrialClosesCleanly(t *testing.T) {
	f := newFixture(t)
	setup, err := runner.SetUpBrowser(t.Context(), quiet, f.provider, f.treatment())
	require.NoError(t, err)
	f.fake.Expire(f.fake.Live()[0])
	eventually(t, func() bool {
		_, err := setup.Browser.LiveTools(t.Context())
		return err != nil
	}, "an expired browser cannot be reached")
	require.NoError(t, setup.Browser.Close(t.Context()), "a browser Kernel no longer knows is gone: not an error")
	assert.Empty(t, f.provider.Live())
}

func TestQuotaAnswersHoldBackAndAreRetriedWithinTheSetup(t *testing.T) {
	f := newFixture(t, func(c *remote.Config) { c.QuotaWait = 300 * time.Millisecond })
	f.fake.SetFaults(kerneltest.Faults{Quota: 2, RetryAfter: time.Second})
	start := time.Now()
	setup, err := runner.SetUpBrowser(t.Context(), quiet, f.provider, f.treatment())
	require.NoError(t, err)
	defer setup.Browser.Close(t.Context())
	require.Len(t, setup.Failures, 2)
	for _, msg := range setup.Failures {
		assert.Contains(t, msg, "kernel: create a browser")
		assert.Contains(t, msg, "quota or rate limit (HTTP 429): concurrent browser limit reached")
	}
	// Each retry waited for the Retry-After Kernel asked for.
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second)

	// Quota answers for every browser abort the setup, with the reason.
	f.fake.SetFaults(kerneltest.Faults{Quota: 3})
	_, err = runner.SetUpBrowser(t.Context(), quiet, f.provider, f.treatment())
	var se *runner.SetupError
	require.ErrorAs(t, err, &se)
	assert.Len(t, se.Failures, 3)
	assert.Contains(t, se.Reason(), "quota or rate limit (HTTP 429)")
}

func TestCreateErrorsAreRetriedWithinTheSetup(t *testing.T) {
	f := newFixture(t)
	f.fake.SetFaults(kerneltest.Faults{CreateErrors: 1})
	setup, err := runner.SetUpBrowser(t.Context(), quiet, f.provider, f.treatment())
	require.NoError(t, err)
	defer setup.Browser.Close(t.Context())
	require.Len(t, setup.Failures, 1)
	assert.Contains(t, setup.Failures[0], "HTTP 500 internal_error: failed to allocate a browser")
}

func TestBadKeyAndMissingProfileSayWhy(t *testing.T) {
	f := newFixture(t)
	_, err := f.provider.Open(t.Context(), runner.BrowserSpec{Profile: "nobody"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `HTTP 404 not_found: profile "nobody" not found`)

	svc, err := kernel.New(kernel.Config{APIKey: "sk_wrong", BaseURL: f.fake.URL})
	require.NoError(t, err)
	_, err = svc.Create(t.Context(), runner.BrowserSpec{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 401 unauthorized: invalid API key (check KERNEL_API_KEY)")

	_, err = kernel.New(kernel.Config{})
	assert.ErrorContains(t, err, "set KERNEL_API_KEY")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

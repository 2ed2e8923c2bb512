package local

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
)

// BenchmarkSetup measures a treatment trial's browser setup with real
// Chromium: start, tool registration, start-page load and the entry-tool
// check, then the close. It reports each step's mean in milliseconds. The
// browser's sandbox starts under the init an installed pairbench uses
// (sandbox.InitProgram), not under this test binary.
func BenchmarkSetup(b *testing.B) {
	site := testsite.New(b)
	initProgram := sandboxtest.InitProgram(b)
	p := newProvider(b, site, func(c *Config) { c.Executable = initProgram })
	spec := runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/",
		Tools: testsite.BookTools(b), EntryTool: "find_books", Attempts: 1,
	}
	var sum runner.SetupTiming
	var closing time.Duration
	for b.Loop() {
		setup, err := runner.SetUpBrowser(context.Background(), quiet, p, spec)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := setup.Browser.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		closing += time.Since(start)
		sum.Open += setup.Timing.Open
		sum.Register += setup.Timing.Register
		sum.Load += setup.Timing.Load
		sum.Check += setup.Timing.Check
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(ms(sum.Open), "open-ms")
	b.ReportMetric(ms(sum.Register), "register-ms")
	b.ReportMetric(ms(sum.Load), "load-ms")
	b.ReportMetric(ms(sum.Check), "check-ms")
	b.ReportMetric(ms(sum.Total()), "setup-ms")
	b.ReportMetric(ms(closing), "close-ms")
}

// BenchmarkFloodedPipe measures what a page's tool result of 64 MiB costs
// pairbench: with the pipe's limit (32 MiB), the call fails and B/op is
// what reading up to the limit took; without one (limit above the result),
// the whole result is decoded. Run it with -benchmem and compare B/op.
func BenchmarkFloodedPipe(b *testing.B) {
	for _, limit := range []int{DefaultPipeMessageLimit, 1 << 30} {
		b.Run(fmt.Sprintf("limit=%dMiB", limit>>20), func(b *testing.B) {
			p := newProvider(b, testsite.New(b), func(c *Config) { c.pipeLimit = limit })
			args := fmt.Appendf(nil, `{"n":%d}`, 64<<20)
			for b.Loop() {
				b.StopTimer()
				br := openBrowser(b, p)
				if _, err := br.Load(b.Context(), "http://books.test/flood"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				_, err := br.InvokeTool(b.Context(), "flood", args)
				if tooLarge := (*MessageTooLargeError)(nil); errors.As(err, &tooLarge) != (limit < 64<<20) {
					b.Fatalf("limit %d MiB: %v", limit>>20, err)
				}
				b.StopTimer()
				br.Close(b.Context())
				b.StartTimer()
			}
		})
	}
}

// Package pagetest opens pages pairbench renders in headless Chromium at a
// given width, so tests can measure them (does a table scroll sideways?)
// and keep a full-page screenshot for a person to look at. Tests that use
// it run inside internal/offline's network namespace (offline.Main), as
// every test that starts Chromium does.
package pagetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/internal/realstack"
)

// Browser is one headless Chromium for a test; it ends with the test.
type Browser struct {
	ctx context.Context
}

// Start starts Chromium for t.
func Start(t testing.TB) *Browser {
	t.Helper()
	realstack.Need(t, realstack.Chromium)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(local.DefaultChromiumPath),
		chromedp.NoSandbox, // tests run as root; the pages are our own
		chromedp.Flag("hide-scrollbars", false),
		chromedp.Flag("font-render-hinting", "none"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &Browser{ctx: ctx}
}

// Page is one tab showing a page at a fixed width.
type Page struct {
	t   testing.TB
	ctx context.Context
}

// Open opens url in a new tab whose viewport is width CSS pixels wide (and
// 800 high) and waits for it to load.
func (b *Browser) Open(t testing.TB, url string, width int) *Page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(stop)
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(int64(width), 800),
		chromedp.Navigate(url),
		chromedp.WaitReady("body"),
	)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return &Page{t: t, ctx: ctx}
}

// Eval evaluates expr in the page (DevTools evaluates it whatever the
// page's Content-Security-Policy) and returns its value.
func Eval[T any](p *Page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Width returns how wide the element matched by selector is laid out
// (scrollWidth) and how wide the page's viewport is, in CSS pixels. An
// element wider than the viewport makes the page scroll sideways.
func (p *Page) Width(selector string) (element, viewport int) {
	p.t.Helper()
	got := Eval[struct{ Element, Viewport int }](p, `(() => { const e = document.querySelector(`+quote(selector)+`);
		return {Element: e ? Math.ceil(e.getBoundingClientRect().right) : -1, Viewport: document.documentElement.clientWidth}; })()`)
	if got.Element < 0 {
		p.t.Fatalf("no element matches %s", selector)
	}
	return got.Element, got.Viewport
}

// ScrollsSideways reports whether the document is wider than its viewport.
func (p *Page) ScrollsSideways() bool {
	p.t.Helper()
	return Eval[bool](p, `document.documentElement.scrollWidth > document.documentElement.clientWidth`)
}

// MaxShotHeight bounds a screenshot's height in CSS pixels: Chromium
// refuses to capture much taller pages, and no one reads further.
const MaxShotHeight = 12000

// Screenshot writes a PNG of the page to path: all of it, or its top
// MaxShotHeight pixels.
func (p *Page) Screenshot(path string) {
	p.t.Helper()
	size := Eval[struct{ W, H float64 }](p, `({W: document.documentElement.clientWidth, H: document.documentElement.scrollHeight})`)
	shot := func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: &yes, FromSurface: &yes,
			Clip: &page.Viewport{Width: size.W, Height: min(size.H, MaxShotHeight), Scale: 1},
		})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	}
	png, err := chromedp.Run(p.ctx, chromedp.Action[[]byte](shot))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("write screenshot: %v", err)
	}
}

var yes = true

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		if r == '"' || r == '\\' {
			b = append(b, '\\')
		}
		b = append(b, string(r)...)
	}
	return string(append(b, '"'))
}

package driver

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/pairbench/pairbench/browser/internal/cdpconn"
)

// NativeWebMCP reports whether the current page has the browser's own
// WebMCP (document.modelContext from Chromium itself, as Kernel's browsers
// and Chromium with WebMCPTesting have). It looks from an isolated world,
// where a page's (or the polyfill's) script-defined modelContext is not
// visible and the browser's built-in one is, so the answer is the same in
// both arms.
func (b *Browser) NativeWebMCP(ctx context.Context) (bool, error) {
	t, err := b.current(ctx)
	if err != nil {
		return false, err
	}
	world, err := cdpconn.Send(ctx, b.conn, t.session, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID: cdp.FrameID(t.id), WorldName: "pairbench-probe-" + randomHex(4),
	})
	if err != nil {
		return false, fmt.Errorf("probe WebMCP: %w", err)
	}
	res, err := cdpconn.Send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{
		Expression: `"modelContext" in document`, ContextID: world.ExecutionContextID, ReturnByValue: ptr(true),
	})
	if err != nil {
		return false, fmt.Errorf("probe WebMCP: %w", err)
	}
	return res.Result != nil && string(res.Result.Value) == "true", nil
}

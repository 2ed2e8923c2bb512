package driver

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"

	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	"github.com/pairbench/pairbench/rundir"
)

// Screenshot lays the current tab out at rundir.ScreenshotWidth ×
// ScreenshotHeight (scale 1) and returns a PNG of what it shows. The trial
// calls it once its agent has ended, so changing the tab's metrics then
// changes nothing the agent sees.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	t, err := b.current(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := cdpconn.Send(ctx, b.conn, t.session, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: rundir.ScreenshotWidth, Height: rundir.ScreenshotHeight, DeviceScaleFactor: 1,
	}); err != nil {
		return nil, fmt.Errorf("screenshot: set the tab's size: %w", err)
	}
	shot, err := cdpconn.Send(ctx, b.conn, t.session, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return shot.Data, nil
}

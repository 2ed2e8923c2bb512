package driver

import (
	"bytes"
	"context"
	"image/png"
	"testing"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScreenshotIsOneSize: the end-of-trial screenshot is a PNG of the
// page at rundir.ScreenshotWidth × ScreenshotHeight, whatever size the tab
// had.
func TestScreenshotIsOneSize(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(context.Background(), testsite.Patience)
	defer cancel()
	_, err := b.Load(ctx, "http://books.test/")
	require.NoError(t, err)
	shot, err := b.Screenshot(ctx)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "a PNG")
	assert.Equal(t, rundir.ScreenshotWidth, img.Bounds().Dx())
	assert.Equal(t, rundir.ScreenshotHeight, img.Bounds().Dy())
	// The page is drawn, not a blank: more than one colour.
	first := img.At(0, 0)
	varied := false
	for y := 0; y < img.Bounds().Dy() && !varied; y += 7 {
		for x := 0; x < img.Bounds().Dx(); x += 7 {
			if img.At(x, y) != first {
				varied = true
				break
			}
		}
	}
	assert.True(t, varied, "the screenshot shows the page")
}

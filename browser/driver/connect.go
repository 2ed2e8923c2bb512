package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chromedp/chromedp/remote"

	"github.com/pairbench/pairbench/runner"
)

// Connect drives a browser that runs elsewhere (a cloud browser) over its
// browser-level CDP websocket at url, as New drives the Chromium the local
// provider starts: tool registration on every tab, Load with its second
// navigation, live tools, invocations, registration failures and
// screenshots. The browser's confinement, egress and DevTools for the
// agent are its service's and its provider's (browser/remote): its
// DevTools is url, and it reports no refusals. The connection lives until
// Close or until ctx ends; Close ends the connection, not the browser.
// StartTimeout bounds the dial and the wait for the browser's first tab.
//
// An error never quotes url, which may carry the service's token.
func Connect(ctx context.Context, cfg Config, url string) (*Browser, error) {
	cfg.setDefaults()
	dial, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	tr, err := remote.DialContext(dial, url)
	if err != nil {
		return nil, fmt.Errorf("dial the browser's websocket: %w", redactedErr(err, url))
	}
	return New(ctx, cfg, elsewhere(url), tr)
}

// elsewhere is the Process of a browser Connect reached: it runs
// elsewhere, and its DevTools is its websocket's URL.
type elsewhere string

func (u elsewhere) DevTools() runner.DevTools       { return runner.DevTools{URL: string(u)} }
func (elsewhere) Refusals() ([]runner.Refusal, int) { return nil, 0 }
func (elsewhere) StartErr(err error) error          { return err }
func (elsewhere) Stop() error                       { return nil }

// redactedErr is err with url taken out of its text.
func redactedErr(err error, url string) error {
	if url == "" || !strings.Contains(err.Error(), url) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), url, "<browser URL>"))
}

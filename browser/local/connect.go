package local

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chromedp/chromedp/remote"
)

// Connect drives a browser that runs elsewhere (a cloud browser) over its
// browser-level CDP websocket at url, as this package drives the Chromium it
// starts: tool registration on every tab, Load with its second navigation,
// live tools, invocations, registration failures and screenshots. Of cfg
// only the timeouts, Log and Now apply: the browser's confinement, egress
// and DevTools for the agent are its service's and its provider's
// (browser/remote). The connection lives until Close or until ctx
// ends; Close ends the connection, not the browser. StartTimeout bounds the
// dial and the wait for the browser's first tab.
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
	proc := &process{url: url, exited: make(chan struct{})}
	return drive(ctx, cfg, proc, tr)
}

// redactedErr is err with url taken out of its text.
func redactedErr(err error, url string) error {
	if url == "" || !strings.Contains(err.Error(), url) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), url, "<browser URL>"))
}

package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pairbench/pairbench/runner"
)

// Browser is one remote browser: pairbench's driver over its websocket, the
// agent's DevTools relay, and the service's session. It implements
// runner.Browser, and neither runner.RefusalReporter (its egress is the
// service's, which reports no refusals) nor runner.Prestarter (nothing is
// started ahead of Open).
type Browser struct {
	driven
	p     *Provider
	s     Session
	relay *relay

	stopWatch func() bool
	closeOnce sync.Once
	closeErr  error
}

var _ runner.Browser = (*Browser)(nil)

// driven is the driver's browser as far as a remote Browser offers it: the
// driver's Refusals (always none here) and AgentRunning stay hidden.
type driven = runner.Browser

// DevTools is the relay's socket: the agent's sandbox relays Port of its
// own loopback to it, and the relay forwards every websocket to the
// browser's. The agent never learns the browser's real URL.
func (b *Browser) DevTools() runner.DevTools {
	return runner.DevTools{URL: devToolsURL, Socket: b.relay.socket, Port: DevToolsPort}
}

// Session is the service's name for the browser.
func (b *Browser) Session() string { return b.s.ID }

// Close ends the driver's connection and the relay, then deletes the
// browser. A delete that fails is returned and retried by the provider.
// Close is safe to call more than once.
func (b *Browser) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		b.stopWatch()
		errDriver := b.driven.Close(ctx)
		b.relay.close()
		errDelete := b.p.release(b.s)
		if errDriver != nil {
			errDriver = fmt.Errorf("%s: close the connection to browser %s: %w", b.p.cfg.Service.Name(), b.s.ID, errDriver)
		}
		if errDelete != nil {
			errDelete = fmt.Errorf("%s: %w", b.p.cfg.Service.Name(), errDelete)
		}
		b.closeErr = errors.Join(errDelete, errDriver)
	})
	return b.closeErr
}

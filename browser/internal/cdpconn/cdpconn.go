// Package cdpconn is pairbench's flat-session Chrome DevTools Protocol
// client: commands on any session, replies matched by id, and events
// handed in arrival order to one handler. The driver (browser/driver) runs
// every browser over it; the local browser's escape tests attack with it.
package cdpconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// Conn is a flat-session CDP client over a chromedp transport: the pipe of
// Chromium's --remote-debugging-pipe, which only pairbench holds, or a
// browser's websocket.
//
// chromedp's own Target model attaches to each tab itself and cannot hold the
// sessions that browser-level auto-attach creates for tabs paused at start,
// which is what injecting scripts before a new tab's page scripts run needs.
// Conn keeps only what that takes: commands on any session, replies matched
// by id, and events handed in arrival order to one handler goroutine.
type Conn struct {
	tr chromedp.Transport

	next    atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan *cdproto.Message
	closed  bool
	err     error // why the connection ended, valid once done is closed

	events chan *cdproto.Message
	done   chan struct{}
	wg     sync.WaitGroup

	// queued counts the events read (read's alone to write); handled those
	// the handler is done with, under evMu, with handledCh closed and
	// replaced after each while someone waits (see drained).
	queued    atomic.Int64
	evMu      sync.Mutex
	handled   int64
	waiters   int
	handledCh chan struct{}
}

// ErrClosed is the error of a call on a connection that has ended.
var ErrClosed = errors.New("CDP connection closed")

// New starts a connection over tr, which it owns from now on. onEvent
// receives every event, one at a time and in order, on a goroutine the
// connection owns; it must not block on a call on the same connection.
func New(tr chromedp.Transport, onEvent func(*cdproto.Message)) *Conn {
	c := &Conn{
		tr:        tr,
		pending:   make(map[int64]chan *cdproto.Message),
		events:    make(chan *cdproto.Message, 256),
		done:      make(chan struct{}),
		handledCh: make(chan struct{}),
	}
	c.wg.Add(2)
	go c.read()
	go func() {
		defer c.wg.Done()
		for ev := range c.events {
			onEvent(ev)
			c.evMu.Lock()
			c.handled++
			if c.waiters > 0 {
				close(c.handledCh)
				c.handledCh = make(chan struct{})
			}
			c.evMu.Unlock()
		}
	}()
	return c
}

// read routes replies to their callers and events to the handler until the
// connection fails or is closed.
func (c *Conn) read() {
	defer c.wg.Done()
	defer close(c.events)
	for {
		msg := new(cdproto.Message)
		if err := c.tr.Read(context.Background(), msg); err != nil {
			c.shut(fmt.Errorf("%w: %w", ErrClosed, err))
			return
		}
		if msg.ID == 0 {
			c.queued.Add(1)
			select {
			case c.events <- msg:
			case <-c.done:
				return
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[msg.ID]
		delete(c.pending, msg.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- msg
		}
	}
}

// Drained returns once the handler is done with every event read before
// the call: the events the browser sent ahead of a reply already received
// have then been handled. It must not be called from the handler.
func (c *Conn) Drained(ctx context.Context) error {
	target := c.queued.Load()
	c.evMu.Lock()
	c.waiters++
	defer func() {
		c.evMu.Lock()
		c.waiters--
		c.evMu.Unlock()
	}()
	for c.handled < target {
		ch := c.handledCh
		c.evMu.Unlock()
		select {
		case <-ch:
		case <-c.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
		c.evMu.Lock()
	}
	c.evMu.Unlock()
	return nil
}

// Done is closed once the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// shut marks the connection ended with err and fails every pending call.
func (c *Conn) shut(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.err = err
	close(c.done)
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// Close ends the connection and waits for its goroutines.
func (c *Conn) Close() {
	c.shut(ErrClosed)
	c.tr.Close()
	c.wg.Wait()
}

// Call sends method with params on session ("" is the browser) and decodes
// the result into res, which may be nil.
func (c *Conn) Call(ctx context.Context, session target.SessionID, method string, params, res any) error {
	r, err := c.Post(ctx, session, method, params)
	if err != nil {
		return err
	}
	return r.Wait(ctx, res)
}

// Reply is a command that was sent and whose answer has not been read.
type Reply struct {
	c      *Conn
	id     int64
	method string
	ch     chan *cdproto.Message
}

// Post sends method with params on session without waiting for the answer.
// The browser handles a session's commands in the order they were posted, so
// a caller can post several and then wait for each.
func (c *Conn) Post(ctx context.Context, session target.SessionID, method string, params any) (*Reply, error) {
	var raw []byte
	if params != nil {
		var err error
		if raw, err = jsonv2.Marshal(params); err != nil {
			return nil, fmt.Errorf("%s: encode params: %w", method, err)
		}
	}
	r := &Reply{c: c, id: c.next.Add(1), method: method, ch: make(chan *cdproto.Message, 1)}
	c.mu.Lock()
	if c.closed {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	c.pending[r.id] = r.ch
	c.mu.Unlock()

	msg := &cdproto.Message{ID: r.id, SessionID: session, Method: cdproto.MethodType(method), Params: raw}
	if err := c.tr.Write(ctx, msg); err != nil {
		c.forget(r.id)
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return r, nil
}

// Wait waits for the answer and decodes its result into res, which may be
// nil.
func (r *Reply) Wait(ctx context.Context, res any) error {
	select {
	case <-ctx.Done():
		r.c.forget(r.id)
		return fmt.Errorf("%s: %w", r.method, ctx.Err())
	case msg, ok := <-r.ch:
		switch {
		case !ok: // closed by shut, after it set err
			return fmt.Errorf("%s: %w", r.method, r.c.err)
		case msg.Error != nil:
			return fmt.Errorf("%s: %w", r.method, msg.Error)
		case res != nil && len(msg.Result) > 0:
			if err := jsonv2.Unmarshal(msg.Result, res); err != nil {
				return fmt.Errorf("%s: decode result: %w", r.method, err)
			}
		}
		return nil
	}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Send runs a typed cdproto command on session and returns its result.
func Send[P, R any](ctx context.Context, c *Conn, session target.SessionID, cmd cdp.Command[P, R], params P) (R, error) {
	var res R
	err := c.Call(ctx, session, cmd.Method, params, &res)
	return res, err
}

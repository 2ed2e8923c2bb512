package state

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"sync"
)

// writeGate is SQLite's one write lock taken in Go, before the database
// is asked for it, so that the connections of one process never wait in
// SQLite's busy handler (which sleeps in steps of milliseconds) and the
// acknowledgement path goes first: an urgent holder is next as soon as the
// current one is done, ahead of every other waiter.
type writeGate struct {
	mu     sync.Mutex
	held   bool
	urgent []chan struct{}
	normal []chan struct{}
}

// acquire waits until the gate is the caller's, or ctx ends.
func (g *writeGate) acquire(ctx context.Context, urgent bool) error {
	g.mu.Lock()
	if !g.held {
		g.held = true
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if urgent {
		g.urgent = append(g.urgent, ch)
	} else {
		g.normal = append(g.normal, ch)
	}
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if removed := g.drop(ch); !removed {
		// Handed over while ctx ended: pass it on.
		g.mu.Unlock()
		g.release()
		return ctx.Err()
	}
	g.mu.Unlock()
	return ctx.Err()
}

// drop removes waiter ch, and reports whether it was still waiting.
func (g *writeGate) drop(ch chan struct{}) bool {
	for _, q := range []*[]chan struct{}{&g.urgent, &g.normal} {
		for i, c := range *q {
			if c == ch {
				*q = append((*q)[:i], (*q)[i+1:]...)
				return true
			}
		}
	}
	return false
}

// release hands the gate to the first urgent waiter, else the first other
// one, else frees it.
func (g *writeGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var next chan struct{}
	switch {
	case len(g.urgent) > 0:
		next, g.urgent = g.urgent[0], g.urgent[1:]
	case len(g.normal) > 0:
		next, g.normal = g.normal[0], g.normal[1:]
	default:
		g.held = false
		return
	}
	close(next)
}

// gatedConnector opens SQLite connections whose transactions, and
// statements outside one, hold gate while they run.
type gatedConnector struct {
	driver.Connector
	gate   *writeGate
	urgent bool
}

// sqliteConn is what database/sql uses of a modernc.org/sqlite connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

func (c gatedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, errors.New("state: the SQLite driver's connection lacks a method the write gate needs")
	}
	return &gatedConn{sqliteConn: inner, gate: c.gate, urgent: c.urgent}, nil
}

// gatedConn is a connection that takes the gate for each transaction and
// for each statement outside one. database/sql uses a connection from one
// goroutine at a time.
type gatedConn struct {
	sqliteConn
	gate   *writeGate
	urgent bool
	inTx   bool
	// stmts caches prepared statements by query text, lru orders them.
	stmts map[string]*list.Element
	lru   *list.List
}

func (c *gatedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *gatedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.gate.acquire(ctx, c.urgent); err != nil {
		return nil, err
	}
	tx, err := c.sqliteConn.BeginTx(ctx, opts)
	if err != nil {
		c.gate.release()
		return nil, err
	}
	c.inTx = true
	return &gatedTx{Tx: tx, c: c}, nil
}

// hold takes the gate for a statement unless a transaction holds it; done
// gives it back.
func (c *gatedConn) hold(ctx context.Context) (done func(), err error) {
	if c.inTx {
		return func() {}, nil
	}
	if err := c.gate.acquire(ctx, c.urgent); err != nil {
		return nil, err
	}
	return sync.OnceFunc(c.gate.release), nil
}

func (c *gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	done, err := c.hold(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	st, put, err := c.cached(ctx, query)
	if err != nil {
		return nil, err
	}
	defer put()
	return st.ExecContext(ctx, args)
}

func (c *gatedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	done, err := c.hold(ctx)
	if err != nil {
		return nil, err
	}
	st, put, err := c.cached(ctx, query)
	if err != nil {
		done()
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args)
	if err != nil {
		put()
		done()
		return nil, err
	}
	return &gatedRows{Rows: rows, done: func() { put(); done() }}, nil
}

// cached returns query's statement from the connection's cache, prepared
// on first use (SQLite's parsing and planning was a third of the service's
// CPU under load, River's long statements most of it); put gives it back.
// A statement whose rows are still open is not shared: the query gets one
// of its own.
func (c *gatedConn) cached(ctx context.Context, query string) (st sqliteStmt, put func(), err error) {
	if c.stmts == nil {
		c.stmts, c.lru = map[string]*list.Element{}, list.New()
	}
	if e, ok := c.stmts[query]; ok {
		cs := e.Value.(*cachedStmt)
		if !cs.busy {
			cs.busy = true
			c.lru.MoveToFront(e)
			return cs.st, func() { cs.busy = false }, nil
		}
		st, err := c.prepare(ctx, query)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
	st, err = c.prepare(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	cs := &cachedStmt{query: query, st: st, busy: true}
	c.stmts[query] = c.lru.PushFront(cs)
	for e := c.lru.Back(); c.lru.Len() > maxCachedStmts && e != nil; {
		prev := e.Prev()
		if old := e.Value.(*cachedStmt); !old.busy {
			old.st.Close()
			delete(c.stmts, old.query)
			c.lru.Remove(e)
		}
		e = prev
	}
	return st, func() { cs.busy = false }, nil
}

// maxCachedStmts bounds a connection's statement cache: River's statements
// and the service's, with room for the acknowledgement path's batch sizes.
const maxCachedStmts = 256

type cachedStmt struct {
	query string
	st    sqliteStmt
	busy  bool // in use, its rows not yet closed
}

func (c *gatedConn) prepare(ctx context.Context, query string) (sqliteStmt, error) {
	s, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	st, ok := s.(sqliteStmt)
	if !ok {
		s.Close()
		return nil, errors.New("state: the SQLite driver's statement lacks a method the write gate needs")
	}
	return st, nil
}

// Close closes the cached statements, then the connection.
func (c *gatedConn) Close() error {
	var errs []error
	for _, e := range c.stmts {
		errs = append(errs, e.Value.(*cachedStmt).st.Close())
	}
	c.stmts, c.lru = nil, nil
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

func (c *gatedConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *gatedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return &gatedStmt{sqliteStmt: st, c: c}, nil
}

type gatedTx struct {
	driver.Tx
	c *gatedConn
}

func (t *gatedTx) Commit() error {
	defer t.end()
	return t.Tx.Commit()
}

func (t *gatedTx) Rollback() error {
	defer t.end()
	return t.Tx.Rollback()
}

func (t *gatedTx) end() {
	t.c.inTx = false
	t.c.gate.release()
}

// gatedRows gives the gate back when closed: a statement outside a
// transaction may write until its rows are read.
type gatedRows struct {
	driver.Rows
	done func()
}

func (r *gatedRows) Close() error {
	defer r.done()
	return r.Rows.Close()
}

// sqliteStmt is what database/sql uses of a modernc.org/sqlite statement.
type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type gatedStmt struct {
	sqliteStmt
	c *gatedConn
}

func (s *gatedStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *gatedStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *gatedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	done, err := s.c.hold(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.sqliteStmt.ExecContext(ctx, args)
}

func (s *gatedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	done, err := s.c.hold(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.sqliteStmt.QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	return &gatedRows{Rows: rows, done: done}, nil
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

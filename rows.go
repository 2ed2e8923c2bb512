package pairbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
)

// RowError is a rows.jsonl line that could not be used.
type RowError struct {
	Line int
	Err  error
}

func (e *RowError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *RowError) Unwrap() error { return e.Err }

// ReadRows reads a whole rows.jsonl stream into memory: ScanRows, keeping
// every row. A reader that only needs each row once (the report) should use
// ScanRows, which holds one row at a time.
func ReadRows(r io.Reader) (rows []Row, partial int, err error) {
	partial, err = ScanRows(r, 0, func(row *Row) error {
		rows = append(rows, *row)
		return nil
	})
	return rows, partial, err
}

// RowFields is a set of a Row's bulky fields, which a reader that does not
// need them can have ScanRows leave out.
type RowFields uint16

const (
	FieldTrialDir RowFields = 1 << iota
	FieldReason
	FieldRaw       // Answer.Raw
	FieldExtracted // Answer.Extracted
	FieldToolsDeclared
	FieldUnregistered
	FieldError
	FieldStartedAt
)

// ScanRows reads a rows.jsonl stream and calls fn with each row, in file
// order, leaving the fields in skip empty in every row (they are still
// read: a line whose skipped field would not decode is as bad as any). This
// is the one reader of the rows format; ReadRows is ScanRows keeping every
// row, and a run directory's rows are read with rundir.RunDir.ScanRows.
//
// A last line without its newline that does not parse is the trace of a writer
// killed mid-append: it is skipped and reported as partial (its line number),
// after the rows before it. Any other bad line stops the read with a
// *RowError naming its line; empty lines are ignored. A UTF-8 byte order
// mark starting the stream is ignored (one starting a later line is a bad
// line). Lines may be of any length. An error from fn stops the read and is
// returned as is.
//
// The lines are decoded on every core, a block of lines at a time, while fn
// is called on the caller's goroutine, one row after another. When ScanRows
// returns it no longer reads r.
//
// The *Row passed to fn, and everything it points to, is valid only during
// the call: copy what you keep.
func ScanRows(r io.Reader, skip RowFields, fn func(*Row) error) (partial int, err error) {
	workers := runtime.GOMAXPROCS(0)
	s := &rowStream{
		skip:  skip,
		work:  make(chan *rowBlock, workers),
		order: make(chan *rowBlock, 2*workers),
		free:  make(chan *rowBlock, 3*workers+2),
		stop:  make(chan struct{}),
	}
	s.wg.Add(1 + workers)
	go s.read(r)
	for range workers {
		go s.decode()
	}
	defer s.wg.Wait()
	defer close(s.stop)
	for blk := range s.order {
		<-blk.done
		for i := range blk.rows {
			if err := fn(&blk.rows[i]); err != nil {
				return 0, err
			}
		}
		switch {
		case blk.bad != nil:
			return 0, blk.bad
		case blk.partial > 0:
			return blk.partial, nil
		case blk.readErr != nil:
			return 0, fmt.Errorf("read rows: %w", blk.readErr)
		}
		s.recycle(blk)
	}
	return 0, nil
}

// blockSize is how much of a rows stream one block holds (more when a line
// is longer).
const blockSize = 1 << 20

// rowStream is one ScanRows: a reader that cuts the stream into blocks of
// whole lines, workers that decode blocks, and the caller taking the blocks
// in order.
type rowStream struct {
	skip  RowFields
	work  chan *rowBlock // to the workers
	order chan *rowBlock // to the caller, in stream order
	free  chan *rowBlock // taken by the caller, for reuse
	stop  chan struct{}  // closed when the caller is done
	wg    sync.WaitGroup
}

// rowBlock is a run of whole lines of the stream and their rows.
type rowBlock struct {
	buf   []byte
	first int  // line number of the block's first line
	last  bool // the stream ends here: the last line may lack its newline
	// readErr is the read error after the block's lines.
	readErr error

	rows    []Row
	bad     *RowError // the first line that does not parse
	partial int       // the line number of a partial last line
	done    chan struct{}
}

func (s *rowStream) block() *rowBlock {
	select {
	case b := <-s.free:
		return b
	default:
		return &rowBlock{buf: make([]byte, 0, blockSize)}
	}
}

func (s *rowStream) recycle(b *rowBlock) {
	b.buf, b.rows = b.buf[:0], b.rows[:0]
	b.bad, b.partial, b.readErr, b.last = nil, 0, nil, false
	select {
	case s.free <- b:
	default:
	}
}

// send hands blk to a worker and queues it for the caller; false when the
// caller is done.
func (s *rowStream) send(blk *rowBlock) bool {
	blk.done = make(chan struct{})
	select {
	case s.order <- blk:
	case <-s.stop:
		return false
	}
	select {
	case s.work <- blk:
		return true
	case <-s.stop:
		return false
	}
}

// read cuts r into blocks that end at a newline (the last one at the end
// of the stream) and sends them on.
func (s *rowStream) read(r io.Reader) {
	defer s.wg.Done()
	defer close(s.work)
	defer close(s.order)
	line := 1
	blk := s.block()
	for {
		if len(blk.buf) == cap(blk.buf) {
			blk.buf = slices.Grow(blk.buf, cap(blk.buf)) // a line longer than the block
		}
		n, err := r.Read(blk.buf[len(blk.buf):cap(blk.buf)])
		blk.buf = blk.buf[:len(blk.buf)+n]
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			// The lines read whole count; the one cut off by the error does not.
			blk.buf = blk.buf[:bytes.LastIndexByte(blk.buf, '\n')+1]
			blk.first, blk.readErr = line, err
			s.send(blk)
			return
		}
		if eof {
			blk.first, blk.last = line, true
			s.send(blk)
			return
		}
		if len(blk.buf) < cap(blk.buf) {
			continue
		}
		cut := bytes.LastIndexByte(blk.buf, '\n') + 1
		if cut == 0 {
			continue
		}
		next := s.block()
		next.buf = append(next.buf, blk.buf[cut:]...)
		blk.buf, blk.first = blk.buf[:cut], line
		line += bytes.Count(blk.buf, []byte{'\n'})
		if !s.send(blk) {
			return
		}
		blk = next
	}
}

// decode decodes blocks until there are none.
func (s *rowStream) decode() {
	defer s.wg.Done()
	d := newRowDecoder()
	for blk := range s.work {
		d.block(blk, s.skip)
		close(blk.done)
	}
}

// block decodes blk's lines into its rows, up to the first bad one.
func (d *rowDecoder) block(blk *rowBlock, skip RowFields) {
	rest := blk.buf
	for line := blk.first; len(rest) > 0; line++ {
		b := rest
		complete := false
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			b, rest, complete = rest[:i], rest[i+1:], true
		} else {
			rest = nil
		}
		if line == 1 {
			b = bytes.TrimPrefix(b, byteOrderMark)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		blk.rows = append(blk.rows, Row{})
		row := &blk.rows[len(blk.rows)-1]
		if err := d.parse(b, row, skip); err != nil {
			if bytes.HasPrefix(b, byteOrderMark) {
				err = errors.New("the line starts with a UTF-8 byte order mark (EF BB BF), which only the first line may have; remove it")
			}
			blk.rows = blk.rows[:len(blk.rows)-1]
			if !complete && blk.last {
				blk.partial = line
			} else {
				blk.bad = &RowError{Line: line, Err: err}
			}
			return
		}
	}
}

// byteOrderMark is UTF-8's byte order mark. Some editors start a file with
// it; the first line of a rows stream may have one, and it is ignored.
var byteOrderMark = []byte{0xEF, 0xBB, 0xBF}

// ParseRow decodes and validates one rows.jsonl line.
func ParseRow(b []byte) (Row, error) {
	var row Row
	if err := newRowDecoder().parse(b, &row, 0); err != nil {
		return Row{}, err
	}
	return row, nil
}

// parse decodes and validates one line into the zero Row at row, the
// fields in skip left empty: by the fast path when it can, else by
// encoding/json.
func (d *rowDecoder) parse(b []byte, row *Row, skip RowFields) error {
	if !d.decode(b, row, skip) {
		*row = Row{}
		if err := decodeRowJSON(b, row); err != nil {
			return err
		}
		row.clear(skip)
	}
	return row.Validate()
}

// clear empties the fields of r in f.
func (r *Row) clear(f RowFields) {
	for _, c := range []struct {
		f     RowFields
		clear func()
	}{
		{FieldTrialDir, func() { r.TrialDir = "" }},
		{FieldReason, func() { r.Reason = "" }},
		{FieldRaw, func() { r.Answer.Raw = "" }},
		{FieldExtracted, func() { r.Answer.Extracted = nil }},
		{FieldToolsDeclared, func() { r.ToolsDeclared = nil }},
		{FieldUnregistered, func() { r.Unregistered = nil }},
		{FieldError, func() { r.Error = "" }},
		{FieldStartedAt, func() { r.StartedAt = "" }},
	} {
		if f&c.f != 0 {
			c.clear()
		}
	}
}

// decodeRowJSON decodes one line into the zero Row at row with
// encoding/json: the reference the fast path agrees with.
func decodeRowJSON(b []byte, row *Row) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(row); err != nil {
		return fmt.Errorf("decode row: %w", err)
	}
	if dec.More() {
		return errors.New("decode row: trailing data after the object")
	}
	return nil
}

// AppendRow encodes row as one rows.jsonl line, newline included.
func AppendRow(dst []byte, row Row) ([]byte, error) {
	row.V = RowVersion
	b, err := json.Marshal(row)
	if err != nil {
		return dst, fmt.Errorf("encode row: %w", err)
	}
	return append(append(dst, b...), '\n'), nil
}

package pairbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	partial, err = ScanRows(r, func(row *Row) error {
		rows = append(rows, *row)
		return nil
	})
	return rows, partial, err
}

// ScanRows reads a rows.jsonl stream and calls fn with each row, in file
// order. This is the one reader of the rows format; ReadRows is ScanRows
// keeping every row.
//
// A last line without its newline that does not parse is the trace of a writer
// killed mid-append: it is skipped and reported as partial (its line number),
// after the rows before it. Any other bad line stops the read with a
// *RowError naming its line; empty lines are ignored. Lines may be of any
// length. An error from fn stops the read and is returned as is.
//
// The *Row passed to fn, and everything it points to, is valid only during
// the call: copy what you keep.
func ScanRows(r io.Reader, fn func(*Row) error) (partial int, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var row Row
	for line := 1; ; line++ {
		b, rerr := br.ReadSlice('\n')
		if errors.Is(rerr, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), b...)
			for errors.Is(rerr, bufio.ErrBufferFull) {
				b, rerr = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return 0, fmt.Errorf("read rows: %w", rerr)
		}
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		b = bytes.TrimSpace(b)
		if len(b) > 0 {
			row = Row{}
			perr := parseRowInto(b, &row)
			switch {
			case perr == nil:
				if err := fn(&row); err != nil {
					return 0, err
				}
			case !complete:
				return line, nil
			default:
				return 0, &RowError{Line: line, Err: perr}
			}
		}
		if rerr != nil {
			return 0, nil
		}
	}
}

// ParseRow decodes and validates one rows.jsonl line.
func ParseRow(b []byte) (Row, error) {
	var row Row
	if err := parseRowInto(b, &row); err != nil {
		return Row{}, err
	}
	return row, nil
}

// parseRowInto decodes and validates one line into the zero Row at row.
func parseRowInto(b []byte, row *Row) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(row); err != nil {
		return fmt.Errorf("decode row: %w", err)
	}
	if dec.More() {
		return errors.New("decode row: trailing data after the object")
	}
	return row.Validate()
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

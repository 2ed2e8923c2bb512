package rundir

import "fmt"

// Problem is something that went wrong without stopping a run: a partial
// row skipped, rows of another run left out, a domain dropped after its
// adoption stage, an upload that failed and is retried. The caller shows it
// (the CLI as a warning, the service in its logs); nothing is lost by
// carrying on.
type Problem struct {
	// File and Line say where, when it is about a file; Line 0 means the
	// whole file.
	File string
	Line int
	// Msg says what went wrong.
	Msg string
	// Attrs are its other details as slog key/value pairs.
	Attrs []any
}

// String returns "file:line: msg", or as much of it as the problem has,
// then its details.
func (p Problem) String() string {
	s := p.Msg
	switch {
	case p.File != "" && p.Line > 0:
		s = fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	case p.File != "":
		s = p.File + ": " + p.Msg
	}
	for i := 0; i+1 < len(p.Attrs); i += 2 {
		s += fmt.Sprintf(" %v=%v", p.Attrs[i], p.Attrs[i+1])
	}
	return s
}

// LogArgs returns the problem's details as slog arguments: its file and
// line, when set, then Attrs.
func (p Problem) LogArgs() []any {
	var args []any
	if p.File != "" {
		args = append(args, "file", p.File)
	}
	if p.Line > 0 {
		args = append(args, "line", p.Line)
	}
	return append(args, p.Attrs...)
}

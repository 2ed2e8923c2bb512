package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos is where something was read from. Pos.String gives "file:line"; a
// type that embeds Pos therefore prints as its position with %v.
type Pos struct {
	File string `json:"file,omitempty" yaml:"-"`
	Line int    `json:"line,omitempty" yaml:"-"`
}

// String formats p as "file:line" ("file" when the line is unknown).
func (p Pos) String() string {
	if p.Line <= 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Problem is one thing wrong in a registry, at the place it was written.
type Problem struct {
	Pos
	Msg string
}

// String formats the problem as "file:line: message", the form editors and
// CI annotations recognise.
func (p Problem) String() string { return p.Pos.String() + ": " + p.Msg }

// Problems is every problem found while loading a registry, sorted by file
// and line. As an error it reads as one problem per line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Sort orders problems by file, then line, keeping the order of discovery
// within a line.
func (ps Problems) Sort() {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
}

// Add appends the problem at pos, its message formatted as fmt.Sprintf does.
func (ps *Problems) Add(pos Pos, format string, args ...any) {
	*ps = append(*ps, Problem{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

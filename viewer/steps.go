package viewer

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/pairbench/pairbench/rundir"
)

// A step is one step of a trial's transcript (rundir.Step) as its page
// shows it: a call's arguments and a JSON result indented, the text
// trimmed to maxStepText.
type step struct {
	Kind rundir.StepKind
	Turn int
	AtMS int64
	Tool string
	Text string
	// Trimmed counts the characters left out of Text.
	Trimmed int
	Error   bool
}

// maxStepText bounds the text a step shows: tool results can be whole
// pages. The trial's files keep everything.
const maxStepText = 2000

func showSteps(steps []rundir.Step) []step {
	out := make([]step, len(steps))
	for i, s := range steps {
		text := s.Text
		switch {
		case s.Kind == rundir.CallStep && (len(s.Args) > 0 || text == ""):
			text = indent(s.Args)
		case s.Kind == rundir.ResultStep:
			if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
				text = indent(json.RawMessage(t))
			}
		}
		out[i] = step{Kind: s.Kind, Turn: s.Turn, AtMS: s.AtMS, Tool: s.Tool, Error: s.Error}
		out[i].Text, out[i].Trimmed = trim(text, maxStepText)
	}
	return out
}

// indent shows JSON arguments indented, or as they are when they are not
// JSON.
func indent(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// trim keeps s's first max characters (runes), cut at a rune boundary,
// and returns how many it left out.
func trim(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, 0
	}
	cut := 0
	for i := 0; i < max; i++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return s[:cut], n - max
}

package model

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/pairbench/pairbench/runner"
)

// The scripted judge: when the conversation's one user message is a
// judge's question (a runner.JudgeInput), the scripted model answers as a
// deterministic judge. A criterion scores the share of the phrases its
// description quotes ("…" or “…”) that the answer holds, case and white
// space aside (a price such as "$6.80" also as the number 6.80); a
// criterion that quotes nothing scores 1 when the answer holds any value,
// else 0. It reads the answer alone, never the page, and knows nothing of
// the arm: the same answer always gets the same scores.

// judgeQuestion returns the judge's question in user, and false when the
// conversation is not one.
func judgeQuestion(user []string) (runner.JudgeInput, bool) {
	var ji runner.JudgeInput
	if len(user) != 1 {
		return ji, false
	}
	dec := json.NewDecoder(strings.NewReader(user[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ji); err != nil || ji.Task == "" || len(ji.Criteria) == 0 {
		return ji, false
	}
	return ji, true
}

// quoted matches a phrase in straight or curly double quotes.
var quoted = regexp.MustCompile(`"([^"]+)"|“([^”]+)”`)

// verdict is the scripted judge's reply to ji: a JSON verdict in a fenced
// block.
func verdict(ji runner.JudgeInput) string {
	answer, _ := json.Marshal(ji.Answer)
	c := newCorpus([]string{string(answer)})
	filled := false
	for _, v := range ji.Answer {
		filled = filled || (v != nil && v != "")
	}
	scores := map[string]float64{}
	var why []string
	for _, cr := range ji.Criteria {
		var phrases []string
		for _, m := range quoted.FindAllStringSubmatch(cr.Description, -1) {
			phrases = append(phrases, m[1]+m[2])
		}
		if len(phrases) == 0 {
			if filled {
				scores[cr.ID] = 1
				why = append(why, cr.ID+": the answer holds a value")
			} else {
				why = append(why, cr.ID+": the answer is empty")
				scores[cr.ID] = 0
			}
			continue
		}
		var held []string
		for _, p := range phrases {
			if holds(c, p) {
				held = append(held, p)
			}
		}
		scores[cr.ID] = float64(len(held)) / float64(len(phrases))
		why = append(why, fmt.Sprintf("%s: the answer holds %d of %d quoted phrases", cr.ID, len(held), len(phrases)))
	}
	b, err := json.MarshalIndent(map[string]any{"scores": scores, "reasoning": strings.Join(why, "; ") + "."}, "", "  ")
	if err != nil {
		b = []byte("{}")
	}
	return "```json\n" + string(b) + "\n```"
}

// holds reports whether the answer's corpus holds phrase: as text, or, for
// a phrase that is an amount ("$6.80"), as that number in any spelling.
func holds(c corpus, phrase string) bool {
	if c.has(phrase) {
		return true
	}
	core := strings.TrimFunc(phrase, func(r rune) bool { return !unicode.IsDigit(r) })
	f, err := strconv.ParseFloat(strings.ReplaceAll(core, ",", ""), 64)
	return err == nil && c.has(f)
}

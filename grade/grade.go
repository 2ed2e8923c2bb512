// Package grade turns an agent's final message into an outcome: it extracts
// the answer leniently (Extract), checks it against the intent's answer JSON
// Schema and rules (Compile, Grader.Grade), and classifies a whole trial from
// what the runner observed (Classify). Price and AsSet define how the
// report's agreement checks read answers.
package grade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

// Grader checks answers for one intent. It is safe for concurrent use.
type Grader struct {
	intent string
	schema *jsonschema.Schema
	rules  []rule
}

// Result is the grade of one final message.
type Result struct {
	// Outcome is Correct, Wrong or Malformed.
	Outcome pairbench.Outcome
	// Reason says why the answer is not correct: the extraction failure, the
	// schema error, or each failing rule by kind, field and position. It is
	// empty when the answer is correct.
	Reason string
	// Extracted is the answer read from the message (nil when malformed).
	Extracted map[string]any
}

// Compile builds the Grader for in: it compiles the answer JSON Schema (draft
// 2020-12 unless the schema names another; "format" is asserted; $refs may
// only point inside the schema) and validates and compiles every rule. It
// returns every problem at once as an intents.Problems, each at the position
// of the rule (or, for the schema, of the intent), so a registry check can
// list them with its own.
func Compile(in *intents.Intent) (*Grader, error) {
	g := &Grader{intent: in.ID}
	var probs intents.Problems
	schema, err := compileSchema(in)
	if err != nil {
		probs = append(probs, intents.Problem{Pos: in.Pos, Msg: "answer schema: " + err.Error()})
	}
	g.schema = schema
	for i, r := range in.Rules {
		cr, err := compileRule(r)
		if err != nil {
			probs = append(probs, intents.Problem{Pos: r.Pos, Msg: fmt.Sprintf("rule %d (%s): %v", i+1, ruleName(r), err)})
			continue
		}
		g.rules = append(g.rules, cr)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return g, nil
}

func compileSchema(in *intents.Intent) (*jsonschema.Schema, error) {
	if in.Answer == nil {
		return nil, errors.New("missing")
	}
	// Round-trip through JSON so values read from YAML (ints, nested maps)
	// take the forms the schema library expects.
	b, err := json.Marshal(in.Answer)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// No loader: a $ref outside this document fails to compile rather than
	// reading a file or the network.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	// Each intent has its own compiler, so one fixed name serves them all.
	const url = "urn:pairbench:answer"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Grade extracts the answer from an agent's final message and checks it.
// Nothing extractable is Malformed; a schema failure or a failing rule is
// Wrong; otherwise Correct.
func (g *Grader) Grade(final string) Result {
	answer, err := Extract(final)
	if err != nil {
		return Result{Outcome: pairbench.Malformed, Reason: err.Error()}
	}
	return g.Check(answer)
}

// Check checks an answer that is already extracted, such as an intent's
// baseline answer. Outcome is Correct or Wrong; Extracted is the answer as
// checked (numbers as float64).
func (g *Grader) Check(answer map[string]any) Result {
	b, err := json.Marshal(answer)
	if err != nil {
		return Result{Outcome: pairbench.Wrong, Reason: fmt.Sprintf("answer is not JSON: %v", err)}
	}
	var norm map[string]any
	if err := json.Unmarshal(b, &norm); err != nil || norm == nil {
		return Result{Outcome: pairbench.Wrong, Reason: "answer is not a JSON object"}
	}
	res := Result{Outcome: pairbench.Wrong, Extracted: norm}
	if err := g.schema.Validate(norm); err != nil {
		res.Reason = "answer schema: " + schemaReason(err)
		return res
	}
	var failed []string
	for _, r := range g.rules {
		if err := r.eval(norm); err != nil {
			failed = append(failed, fmt.Sprintf("rule %s (%s): %v", r.name(), r.src.Pos.String(), err))
		}
	}
	if len(failed) > 0 {
		res.Reason = strings.Join(failed, "; ")
		return res
	}
	res.Outcome = pairbench.Correct
	return res
}

// schemaReason reduces a validation error to its first leaf, one line.
func schemaReason(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return strings.ReplaceAll(ve.Error(), "\n", " ")
}

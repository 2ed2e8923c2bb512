package grade

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
)

func TestClassify(t *testing.T) {
	allow := []string{"mcp__browser__browser_click", "mcp__pairbench__webmcp"}
	correct := Result{Outcome: pairbench.Correct}
	// ok is a trial where nothing went wrong; each case changes what it names.
	ok := func(change func(*Facts)) Facts {
		f := Facts{
			Allowlist:     allow,
			ToolsDeclared: []string{"mcp__pairbench__webmcp", "mcp__browser__browser_click"},
			StopReason:    "stop",
			Costs:         []any{0.01, 0.0, 0.02},
			Grade:         correct,
		}
		if change != nil {
			change(&f)
		}
		return f
	}
	tests := []struct {
		name   string
		facts  Facts
		want   pairbench.Outcome
		reason string
	}{
		{"clean trial takes the grade", ok(nil), pairbench.Correct, ""},
		{"wrong grade passes through", ok(func(f *Facts) { f.Grade = Result{Outcome: pairbench.Wrong, Reason: "rule equals x"} }), pairbench.Wrong, "rule equals x"},
		{"malformed passes through", ok(func(f *Facts) { f.Grade = Result{Outcome: pairbench.Malformed, Reason: "no answer"} }), pairbench.Malformed, "no answer"},
		{"zero-tool run with empty allowlist", ok(func(f *Facts) { f.Allowlist, f.ToolsDeclared = nil, nil }), pairbench.Correct, ""},

		{"missing declared tool aborts", ok(func(f *Facts) { f.ToolsDeclared = allow[:1] }), pairbench.Aborted, "missing mcp__pairbench__webmcp"},
		{"extra declared tool aborts", ok(func(f *Facts) { f.ToolsDeclared = append([]string{"read"}, allow...) }), pairbench.Aborted, "extra read"},
		{"no tools declared aborts", ok(func(f *Facts) { f.ToolsDeclared = nil }), pairbench.Aborted, "declared tools differ"},
		{"runner error aborts", ok(func(f *Facts) { f.RunnerErr = errors.New("agent binary missing") }), pairbench.Aborted, "runner error: agent binary missing"},
		{"provider gave up aborts", ok(func(f *Facts) { f.ProviderGaveUp, f.ProviderError = true, "429 rate limited" }), pairbench.Aborted, "429 rate limited"},
		{"cap hit is timeout", ok(func(f *Facts) { f.CapHit = pairbench.CapTurns }), pairbench.Timeout, "turns cap hit"},
		{"call outside the allowlist crashes", ok(func(f *Facts) { f.OutsideCalls = []string{"bash"} }), pairbench.Crashed, "outside the allowlist: bash"},
		{"stop reason error crashes", ok(func(f *Facts) { f.StopReason = "error" }), pairbench.Crashed, "agent ended on an error"},
		{"error message crashes", ok(func(f *Facts) { f.ErrorMessage = "boom" }), pairbench.Crashed, "boom"},
		{"no cost crashes", ok(func(f *Facts) { f.Costs = nil }), pairbench.Crashed, "no cost reported"},
		{"missing cost crashes", ok(func(f *Facts) { f.Costs = []any{0.1, nil} }), pairbench.Crashed, "cost missing on message 2"},
		{"string cost crashes", ok(func(f *Facts) { f.Costs = []any{"0.1"} }), pairbench.Crashed, "not a number"},
		{"object cost crashes", ok(func(f *Facts) { f.Costs = []any{map[string]any{"total": 1.0}} }), pairbench.Crashed, "not a number"},
		{"negative cost crashes", ok(func(f *Facts) { f.Costs = []any{-1.0} }), pairbench.Crashed, "negative"},

		// Precedence: each case sets two conditions; the earlier one wins.
		{"cap before any tools declared aborts, saying so", ok(func(f *Facts) { f.ToolsDeclared = nil; f.CapHit = pairbench.CapTime }), pairbench.Aborted, "time cap hit before the agent declared its tools"},
		{"cap after a wrong tool set is still the tool set", ok(func(f *Facts) { f.ToolsDeclared = allow[:1]; f.CapHit = pairbench.CapTime }), pairbench.Aborted, "missing mcp__pairbench__webmcp"},
		{"tool set beats runner error", ok(func(f *Facts) { f.ToolsDeclared = nil; f.RunnerErr = errors.New("x") }), pairbench.Aborted, "declared tools differ"},
		{"runner error beats cap", ok(func(f *Facts) { f.RunnerErr = errors.New("disk full"); f.CapHit = pairbench.CapTime }), pairbench.Aborted, "disk full"},
		{"provider gave up beats agent error", ok(func(f *Facts) {
			f.ProviderGaveUp, f.StopReason, f.ErrorMessage = true, "error", "503 after 3 retries"
		}), pairbench.Aborted, "503 after 3 retries"},
		{"provider gave up beats cap", ok(func(f *Facts) { f.ProviderGaveUp = true; f.CapHit = pairbench.CapSpend }), pairbench.Aborted, "provider error"},
		{"cap beats outside call", ok(func(f *Facts) { f.CapHit = pairbench.CapSpend; f.OutsideCalls = []string{"bash"} }), pairbench.Timeout, "spend cap hit"},
		{"cap beats agent error and missing cost", ok(func(f *Facts) {
			f.CapHit = pairbench.CapTime
			f.StopReason = "aborted"
			f.ErrorMessage = "killed"
			f.Costs = nil
		}), pairbench.Timeout, "time cap hit"},
		{"outside call beats agent error", ok(func(f *Facts) { f.OutsideCalls = []string{"bash"}; f.StopReason = "error" }), pairbench.Crashed, "outside the allowlist"},
		{"agent error beats missing cost", ok(func(f *Facts) { f.ErrorMessage = "bad request"; f.Costs = nil }), pairbench.Crashed, "bad request"},
		{"crash beats a correct grade", ok(func(f *Facts) { f.Costs = []any{nil} }), pairbench.Crashed, "cost missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Classify(tt.facts)
			assert.Equal(t, tt.want, got, reason)
			if tt.reason == "" {
				assert.Empty(t, reason)
			} else {
				assert.Contains(t, reason, tt.reason)
			}
		})
	}
}

package grade

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pairbench/pairbench"
)

// Facts is what the runner observed about one trial attempt.
type Facts struct {
	// Allowlist is the set of tools the agent must declare to the model, and
	// ToolsDeclared the set it did declare (nil when it never declared any).
	Allowlist     []string
	ToolsDeclared []string
	// OutsideCalls names tools outside the allowlist that the agent called
	// successfully (one entry per call).
	OutsideCalls []string
	// StopReason is the agent's stop reason on its final message ("stop",
	// "toolUse", "length", "error", "aborted", ...), and ErrorMessage the
	// error it reported there, if any.
	StopReason   string
	ErrorMessage string
	// ProviderGaveUp is true when the model provider kept failing and the
	// agent stopped retrying; ProviderError is the last error it saw.
	ProviderGaveUp bool
	ProviderError  string
	// RunnerErr is an error in the runner itself (setup, I/O, the agent
	// binary missing), not in the agent.
	RunnerErr error
	// Costs holds the cost the agent reported on each of its assistant
	// messages, as decoded from its event stream: nil where the cost was
	// missing, a number, or whatever else it sent.
	Costs []any
	// CapHit is the cap the runner enforced by stopping the agent, or "".
	CapHit pairbench.Cap
	// Grade is the grade of the agent's final message.
	Grade Result
}

// Classify decides a trial's outcome and the reason for it, in this order of
// precedence (the first that applies wins):
//
//  1. aborted: the declared tools are not exactly the allowlist (as sets),
//     which includes a cap hit before the agent declared any (its first
//     model request): the reason then says so, since nothing was compared;
//  2. aborted: the runner erred, or the provider failed and the agent gave up
//     retrying;
//  3. timeout: a cap was hit (the reason names it);
//  4. crashed: a call to a tool outside the allowlist succeeded, the final
//     message reports an error (stop reason "error" or an error message), or
//     a cost is missing, not a number, negative or there is none at all;
//  5. otherwise the grade: correct, wrong or malformed.
//
// Aborted trials say nothing about the agent and their pair runs again.
func Classify(f Facts) (pairbench.Outcome, string) {
	if f.ToolsDeclared == nil && len(f.Allowlist) > 0 && f.CapHit != "" {
		return pairbench.Aborted, fmt.Sprintf("%s cap hit before the agent declared its tools", f.CapHit)
	}
	if missing, extra := setDiff(f.Allowlist, f.ToolsDeclared); len(missing)+len(extra) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "missing "+strings.Join(missing, ", "))
		}
		if len(extra) > 0 {
			parts = append(parts, "extra "+strings.Join(extra, ", "))
		}
		return pairbench.Aborted, "declared tools differ from the allowlist: " + strings.Join(parts, "; ")
	}
	if f.RunnerErr != nil {
		return pairbench.Aborted, "runner error: " + f.RunnerErr.Error()
	}
	if f.ProviderGaveUp {
		msg := f.ProviderError
		if msg == "" {
			msg = f.ErrorMessage
		}
		return pairbench.Aborted, "provider error, retries given up: " + orUnknown(msg)
	}
	if f.CapHit != "" {
		return pairbench.Timeout, fmt.Sprintf("%s cap hit", f.CapHit)
	}
	if len(f.OutsideCalls) > 0 {
		return pairbench.Crashed, "successful call outside the allowlist: " + strings.Join(f.OutsideCalls, ", ")
	}
	if f.StopReason == "error" || f.ErrorMessage != "" {
		return pairbench.Crashed, "agent ended on an error: " + orUnknown(f.ErrorMessage)
	}
	if why := costProblem(f.Costs); why != "" {
		return pairbench.Crashed, why
	}
	return f.Grade.Outcome, f.Grade.Reason
}

// costProblem says what is wrong with the reported costs, or "".
func costProblem(costs []any) string {
	if len(costs) == 0 {
		return "no cost reported"
	}
	for i, c := range costs {
		if c == nil {
			return fmt.Sprintf("cost missing on message %d", i+1)
		}
		if _, isString := c.(string); isString {
			return fmt.Sprintf("cost on message %d is not a number: %q", i+1, c)
		}
		f, ok := pairbench.Number(c)
		if !ok {
			return fmt.Sprintf("cost on message %d is not a number: %v", i+1, c)
		}
		if f < 0 || math.IsNaN(f) {
			return fmt.Sprintf("cost on message %d is negative: %v", i+1, f)
		}
	}
	return ""
}

// setDiff returns the elements of want missing from got and those of got
// not in want, each sorted and without duplicates.
func setDiff(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) && !slices.Contains(missing, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) && !slices.Contains(extra, g) {
			extra = append(extra, g)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

func orUnknown(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}

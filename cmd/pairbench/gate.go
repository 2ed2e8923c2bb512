package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
)

// exitGate is the exit code of a run, report or merge whose final report
// fails --fail-on: its verdict or a benched intent's label is one named.
const exitGate = 3

// gateFlag is --fail-on LABELS.
type gateFlag struct{ labels []pairbench.Label }

func (g *gateFlag) String() string {
	s := make([]string, len(g.labels))
	for i, l := range g.labels {
		s[i] = string(l)
	}
	return strings.Join(s, ",")
}

func (g *gateFlag) Set(v string) error {
	labels, err := report.ParseGate(v)
	if err != nil {
		return err
	}
	g.labels = append(g.labels, labels...)
	return nil
}

func (*gateFlag) Type() string { return "labels" }

// addGateFlag binds --fail-on to g.
func addGateFlag(cmd *cobra.Command, g *gateFlag) {
	cmd.Flags().Var(g, "fail-on", `exit 3 when the final report's verdict or a benched intent's label is one of these, or with worse when head is worse than base (comma-separated, e.g. "less accurate,slower" or "worse"): a merge gate`)
}

// gateError says which labels failed --fail-on.
type gateError struct{ failed []string }

func (e gateError) Error() string {
	return "--fail-on: " + strings.Join(e.failed, "; ")
}

// check reads the report in dir and returns a gateError when it fails the
// gate; nil without a gate, or when it passes (a report that is not final
// never fails: it has no verdict).
func (g *gateFlag) check(dir rundir.RunDir) error {
	if len(g.labels) == 0 {
		return nil
	}
	rep, err := dir.ReadReport()
	if err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	if failed := rep.Gate(g.labels); len(failed) > 0 {
		return gateError{failed}
	}
	return nil
}

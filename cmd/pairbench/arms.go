package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/rundir"
)

// armOptions are run's --control, --treatment and --against.
type armOptions struct {
	control, treatment, against, changes string
}

// armFlags binds run's arm flags to o.
func armFlags(cmd *cobra.Command, o *armOptions) {
	f := cmd.Flags()
	f.StringVar(&o.control, "control", "none", "the control arm: none, tools, tools@REV, context, tools+context or tools@REV+context (REV: a git revision of the registry's repository)")
	f.StringVar(&o.treatment, "treatment", "tools", "the treatment arm, as --control")
	f.StringVar(&o.against, "against", "", "bench the registry's tools against its tools at git revision REV: --control tools@REV --treatment tools")
	f.StringVar(&o.changes, "changes", "", "bench what changed since git revision BASE (a pull request's base): a domain whose tools changed against its tools at BASE, a new one or one whose intents alone changed against no tools, an untouched one not at all; with --intent, those intents, each as its domain's changes choose")
}

// apply sets cfg.Arms (or cfg.Changes) from the flags; the error names
// the flag at fault.
func (o armOptions) apply(cmd *cobra.Command, cfg *bench.Config) error {
	if o.changes != "" {
		for _, f := range []string{"control", "treatment", "against"} {
			if cmd.Flags().Changed(f) {
				return fmt.Errorf("--changes chooses the arms from the diff: give no --%s with it", f)
			}
		}
		cfg.Changes = o.changes
		return nil
	}
	if o.against != "" {
		if cmd.Flags().Changed("control") || cmd.Flags().Changed("treatment") {
			return errors.New("--against REV is --control tools@REV --treatment tools: give one or the others")
		}
		o.control, o.treatment = "tools@"+o.against, "tools"
	}
	var err error
	if cfg.Arms.Control, err = rundir.ParseArmSpec(o.control); err != nil {
		return fmt.Errorf("--control: %w", err)
	}
	if cfg.Arms.Treatment, err = rundir.ParseArmSpec(o.treatment); err != nil {
		return fmt.Errorf("--treatment: %w", err)
	}
	if cfg.Arms.Control.String() == cfg.Arms.Treatment.String() {
		return fmt.Errorf("--control and --treatment are both %s: a bench compares two different arms", cfg.Arms.Control)
	}
	return nil
}

// nothingToBench turns a bench of --changes that found nothing changed
// into a line on stdout and success: a pull request that touches no domain
// needs no bench.
func nothingToBench(err error, stdout io.Writer) error {
	if errors.Is(err, bench.ErrNothingChanged) {
		fmt.Fprintln(stdout, "pairbench: "+err.Error())
		return nil
	}
	return err
}

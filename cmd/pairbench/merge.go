package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/intents/config"
	"github.com/pairbench/pairbench/rundir"
)

// mergeOptions are the flags of pairbench merge.
type mergeOptions struct {
	Store  string
	RunID  string
	Out    string
	Trials bool
	// Report writes the report into Out and publishes it to the store.
	Report bool
	// LinkTTL is how long the printed report link works.
	LinkTTL time.Duration
	// SiteURL is where the store's runs are served as a website: the
	// printed link is then <SiteURL>/<run id>/report.html, which lasts as
	// long as the store keeps the run.
	SiteURL string
	// gate is --fail-on, checked on the merged run's report.
	gate gateFlag
}

func newMergeCmd() *cobra.Command {
	o := mergeOptions{LinkTTL: artifacts.MaxPresignTTL}
	cmd := &cobra.Command{
		Use:   "merge --store LOCATION --run-id ID --out DIR",
		Short: "Fetch a run split across runners from the artifact store into one run directory",
		Long:  longHelp("merge"),
		Args:  argCount(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Store == "" || o.RunID == "" || o.Out == "" {
				return usageError{errors.New("merge needs --store, --run-id and --out")}
			}
			if len(o.gate.labels) > 0 && !o.Report {
				return usageError{errors.New("--fail-on needs --report: the gate is checked on the merged run's report")}
			}
			if err := bench.CheckRunID(o.RunID); err != nil {
				return usageError{err}
			}
			if o.SiteURL != "" && !strings.HasPrefix(o.SiteURL, "https://") && !strings.HasPrefix(o.SiteURL, "http://") {
				return usageError{fmt.Errorf("--site-url %q: want an http(s) URL", o.SiteURL)}
			}
			if o.LinkTTL <= 0 || o.LinkTTL > artifacts.MaxPresignTTL {
				return usageError{fmt.Errorf("--link-ttl %v: want more than 0 and at most %v", o.LinkTTL, artifacts.MaxPresignTTL)}
			}
			return runMerge(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "artifact store holding the run: a directory or s3://bucket/prefix (see docs/artifacts.md)")
	f.StringVar(&o.RunID, "run-id", "", "id of the run to merge")
	f.StringVar(&o.Out, "out", "", "run directory to create (missing or empty)")
	f.BoolVar(&o.Trials, "trials", false, "also fetch every trial directory (transcripts, setup, webmcp logs)")
	f.BoolVar(&o.Report, "report", false, "write the report, with its pair pages, into --out and publish it to the store (fetches the trial directories)")
	f.DurationVar(&o.LinkTTL, "link-ttl", o.LinkTTL, "how long the printed presigned report link works (at most 168h)")
	addGateFlag(cmd, &o.gate)
	f.StringVar(&o.SiteURL, "site-url", "", "URL the store's runs are served at as a website (its <run id>/ folders); the printed link is then <URL>/<run id>/report.html, lasting as long as the run")
	return cmd
}

// runMerge fetches and checks a run and, with o.Report, reports and
// publishes it.
func runMerge(ctx context.Context, o mergeOptions, stdout, stderr io.Writer) error {
	store, err := artifacts.Open(ctx, o.Store)
	if err != nil {
		return err
	}
	return mergeFrom(ctx, store, o, stdout, stderr)
}

// mergeFrom is runMerge on an open store. A run whose plan names a second
// run (compare: both, rundir.Plan.AlsoAgainstNone) is merged with it, the
// second into --out with "-none" after it; both are fetched and checked
// before either is reported, and with o.Report both are reported and
// published, the first first, and the gate checks both.
func mergeFrom(ctx context.Context, store artifacts.Store, o mergeOptions, stdout, stderr io.Writer) error {
	plan, err := mergeRun(ctx, store, o, stderr)
	if err != nil {
		return err
	}
	runs := []mergeOptions{o}
	if len(plan.AlsoAgainstNone) > 0 {
		second := o // named as pairbench run names the second run's directory
		second.RunID, second.Out = config.AgainstNoneRunID(o.RunID), config.AgainstNoneRunID(filepath.Clean(o.Out))
		if _, err := mergeRun(ctx, store, second, stderr); err != nil {
			return fmt.Errorf("compare: both: the run against no tools (%s): %w", second.RunID, err)
		}
		runs = append(runs, second)
	}
	for _, r := range runs {
		fmt.Fprintln(stdout, r.Out)
	}
	if !o.Report {
		return nil
	}
	var gates []error
	for _, r := range runs {
		if err := reportMerged(ctx, store, r, stdout, stderr); err != nil {
			return err
		}
		gates = append(gates, r.gate.check(rundir.RunDir{Path: r.Out}))
	}
	return errors.Join(gates...)
}

// mergeRun fetches run o.RunID into o.Out and returns its plan.
func mergeRun(ctx context.Context, store artifacts.Store, o mergeOptions, stderr io.Writer) (*rundir.Plan, error) {
	// A published report's pair pages show each trial's transcript and
	// screenshot: the site is written from the trial directories.
	trials := o.Trials || o.Report
	plan, warnings, err := bench.Merge(ctx, store, o.RunID, rundir.RunDir{Path: o.Out}, trials)
	warn(stderr, warnings)
	if errors.Is(err, rundir.ErrNotEmpty) {
		return nil, usageError{fmt.Errorf("--out %s is not empty; merge into a new directory", o.Out)}
	}
	return plan, err // Merge's errors name the run and the store
}

// reportMerged writes the report of the run merged into o.Out, publishes
// it to store and prints the link to it.
func reportMerged(ctx context.Context, store artifacts.Store, o mergeOptions, stdout, stderr io.Writer) error {
	if err := runReport(o.Out, "", "", false, stdout, stderr); err != nil {
		return err
	}
	link, err := bench.Publish(ctx, store, o.RunID, rundir.RunDir{Path: o.Out}, o.LinkTTL)
	if err != nil {
		return err
	}
	if o.SiteURL != "" {
		link = bench.SiteLink(o.SiteURL, o.RunID)
	}
	fmt.Fprintln(stdout, link)
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

type viewOptions struct {
	store, runID, addr string
	open               bool
}

func newViewCmd() *cobra.Command {
	var o viewOptions
	cmd := &cobra.Command{
		Use:   "view RUN_DIR | view --store LOCATION --run-id ID",
		Short: "Serve a run's report site on loopback and open it in a browser",
		Long:  longHelp("view"),
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.store != "" && len(args) == 0 && o.runID != "":
			case o.store == "" && o.runID == "" && len(args) == 1:
			default:
				return errors.New("view takes one RUN_DIR, or --store and --run-id")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			}
			return runView(cmd.Context(), o, dir, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.store, "store", "", "artifact store to fetch the run from (a directory, file:// or s3:// URL)")
	cmd.Flags().StringVar(&o.runID, "run-id", "", "with --store, the run to view")
	cmd.Flags().StringVar(&o.addr, "addr", "127.0.0.1:0", "loopback address to serve on (port 0 picks a free one)")
	cmd.Flags().BoolVar(&o.open, "open", true, "open the run page in the desktop's browser (xdg-open), when there is one")
	return cmd
}

// runView serves the report site of dir, or of run o.runID fetched from
// o.store, until ctx ends.
func runView(ctx context.Context, o viewOptions, dir string, stdout, stderr io.Writer) error {
	if err := viewer.CheckLoopback(o.addr); err != nil {
		return usageError{err}
	}
	run := rundir.RunDir{Path: dir}
	if o.store != "" {
		if err := bench.CheckRunID(o.runID); err != nil {
			return usageError{err}
		}
		store, err := artifacts.Open(ctx, o.store)
		if err != nil {
			return usageError{err}
		}
		var remove func()
		var warnings []rundir.Problem
		run, remove, warnings, err = bench.FetchForViewing(ctx, store, o.runID)
		warn(stderr, warnings)
		if err != nil {
			return err
		}
		defer remove()
	} else {
		warnings, err := bench.ReportForViewing(run, false)
		warn(stderr, warnings)
		if err != nil {
			return err
		}
	}
	return viewer.Serve(ctx, run.Path, o.addr, func(url string) {
		fmt.Fprintf(stdout, "serving %s at %s (Ctrl-C stops)\n", run.Path, url)
		if !o.open {
			return
		}
		if err := viewer.OpenInBrowser(url); err != nil {
			fmt.Fprintf(stderr, "pairbench: %v; open %s in a browser\n", err, url)
		}
	})
}

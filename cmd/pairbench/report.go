package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/rundir"
)

func newReportCmd() *cobra.Command {
	var out, link string
	var site bool
	var gate gateFlag
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Compute a run's verdict and write report.json, report.md and report.html",
		Long:  longHelp("report"),
		Args:  argCount(1, 1, "one RUN_DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer bench.HoldReportMemory()()
			if err := runReport(args[0], out, link, site, cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
				return err
			}
			if out == "" {
				out = args[0]
			}
			return gate.check(rundir.RunDir{Path: out})
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the reports to (default RUN_DIR)")
	cmd.Flags().StringVar(&link, "link", "", "URL of the full report, linked from report.md")
	cmd.Flags().BoolVar(&site, "site", false, fmt.Sprintf("write the intent and pair pages whatever the run's size (by default not past %d planned pairs)", bench.SiteUpFrontPairs))
	addGateFlag(cmd, &gate)
	return cmd
}

// runReport builds the report of the run in dir and writes its three
// renderings to out (dir when empty), printing their paths to stdout and
// warnings to stderr.
func runReport(dir, out, link string, site bool, stdout, stderr io.Writer) error {
	if out == "" {
		out = dir
	}
	write := bench.WriteReport
	if site {
		write = bench.WriteReportAndSite
	}
	rep, err := write(rundir.RunDir{Path: dir}, rundir.RunDir{Path: out}, link)
	warn(stderr, rep.Warnings)
	for _, p := range rep.Paths {
		fmt.Fprintln(stdout, p)
	}
	if err == nil && rep.SiteDeferred {
		fmt.Fprintf(stderr, "pairbench: the pages of each intent and pair are not written for a run of more than %d pairs (docs/cli.md): `pairbench view %s` writes them and serves the run, `--site` writes them here; a published report has them\n",
			bench.SiteUpFrontPairs, dir)
	}
	if st := rep.Status; err == nil && !st.Finished() {
		fmt.Fprintf(stderr, "pairbench: warning: the run is incomplete: %d of %d planned pairs have not run; the report says so first and is not a verdict\n", st.Pending, st.Planned)
	}
	return err
}

// warn prints each of ps to w as a warning.
func warn(w io.Writer, ps []rundir.Problem) {
	for _, p := range ps {
		fmt.Fprintf(w, "pairbench: warning: %s\n", p)
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/rundir"
)

func newDemoCmd() *cobra.Command {
	o := benchOptions{Config: bench.DemoConfig()}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Bench the example registry on embedded defaults and print the verdict",
		Long:  longHelp("demo"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.finish(); err != nil {
				return usageError{err}
			}
			log, err := o.logger(cmd.ErrOrStderr())
			if err != nil {
				return usageError{err}
			}
			if _, err := os.Stat(o.Registry); err != nil {
				return fmt.Errorf("the example registry is not at %s (run demo from pairbench's checkout, or pass --registry): %w", o.Registry, err)
			}
			start := time.Now()
			res, err := runBench(cmd.Context(), o, log, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			dir := res.Dir
			md, err := os.ReadFile(dir.File(rundir.ReportMarkdown))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s\n", md)
			html, _ := filepath.Abs(dir.File(rundir.ReportHTML))
			fmt.Fprintf(out, "Full report: %s\n(demo took %s)\n", html, time.Since(start).Round(time.Second))
			return nil
		},
	}
	benchFlags(cmd, &o)
	cmd.Flags().StringVar(&o.Registry, "registry", o.Registry, "registry to bench")
	return cmd
}

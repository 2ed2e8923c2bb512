package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bench"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pairbench's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), bench.Version())
			return err
		},
	}
}

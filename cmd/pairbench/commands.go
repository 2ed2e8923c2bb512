package main

import "github.com/spf13/cobra"

// commands returns every subcommand. Each lives in its own file.
func commands() []*cobra.Command {
	return []*cobra.Command{
		newVersionCmd(),
		newRunCmd(),
		newDemoCmd(),
		newReportCmd(),
		newValidateCmd(),
		newSandboxCmd(),
		newMergeCmd(),
		newPostCmd(),
		newServeCmd(),
		newViewCmd(),
	}
}

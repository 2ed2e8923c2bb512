package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// What `pairbench run` tells its user around the bench: the run id first,
// the exact command that resumes it when a signal stops it, and the
// verdict table last.

// logRunStart logs the run's id and directory, before anything else of it.
func logRunStart(log *slog.Logger, o benchOptions) {
	log.Info("run", "run_id", o.RunID, "dir", filepath.Join(o.RunsDir, o.RunID))
}

// logResume, when a signal stopped ctx, logs the command that resumes the
// run: cmd's command line as given, with --run-id set to runID.
func logResume(ctx context.Context, log *slog.Logger, cmd *cobra.Command, args []string, runID string) {
	var sig signalError
	if !errors.As(context.Cause(ctx), &sig) {
		return
	}
	log.Warn("stopped; to resume the run, run: "+resumeCommand(cmd, args, runID), "run_id", runID)
}

// resumeCommand is cmd's command line, shell-quoted: the flags set, each as
// given (a repeated flag repeated), the arguments, and --run-id runID.
func resumeCommand(cmd *cobra.Command, args []string, runID string) string {
	words := strings.Fields(cmd.CommandPath())
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "run-id" {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+f.Name, v)
			}
			return
		}
		if f.Value.Type() == "bool" {
			words = append(words, "--"+f.Name+"="+f.Value.String())
			return
		}
		words = append(words, "--"+f.Name, f.Value.String())
	})
	words = append(append(words, args...), "--run-id", runID)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// shellQuote quotes w for a POSIX shell when it needs it.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// printVerdict writes the verdict table of the report in dir: the run's
// verdict, then per intent its label, each arm's correct trials and median
// wall seconds of the both-correct pairs.
func printVerdict(w io.Writer, dir runner.RunDir) error {
	rep, err := dir.ReadReport()
	if err != nil {
		return err
	}
	verdict := string(rep.Verdict)
	if verdict == "" {
		verdict = "no intents"
	}
	if rep.Incomplete != nil {
		verdict = fmt.Sprintf("incomplete: %d of %d planned pairs have not run", rep.Incomplete.Pending, rep.Incomplete.Planned)
	}
	fmt.Fprintf(w, "\nverdict: %s (run %s)\n", verdict, rep.RunID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "intent\tlabel\tpairs\tcontrol correct\ttreatment correct\tmedian seconds (control → treatment)")
	for _, in := range rep.Intents {
		speed := "—"
		if s := in.Speed; s != nil {
			speed = fmt.Sprintf("%.1f → %.1f", s.MedianControl, s.MedianTreatment)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", in.ID, labelOrNone(in), in.Pairs.Complete, in.Pairs.Planned,
			armText(in.Control), armText(in.Treatment), speed)
	}
	return tw.Flush()
}

func labelOrNone(in stats.Intent) string {
	if in.Label == "" {
		return "no label"
	}
	return string(in.Label)
}

func armText(a stats.ArmStats) string { return fmt.Sprintf("%d/%d", a.Correct, a.N) }

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

	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
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
func printVerdict(w io.Writer, dir rundir.RunDir) error {
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
	stopped := stoppedText(rep)
	if stopped != "" {
		l := rep.Looks
		fmt.Fprintf(w, "stopped at look %d of %d, %d of %d pairs per intent: %s (%s)\n", l.Look, len(l.Pairs), l.Pairs[l.Look-1], l.Pairs[len(l.Pairs)-1], l.Stop, l.Reason)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "intent\tlabel\tpairs\tcontrol correct\ttreatment correct\tmedian seconds (control → treatment)"
	if stopped != "" {
		head += "\tstopped"
	}
	fmt.Fprintln(tw, head)
	for _, in := range rep.Intents {
		speed := "—"
		if s := in.Speed; s != nil {
			speed = fmt.Sprintf("%.1f → %.1f", s.MedianControl, s.MedianTreatment)
		}
		line := fmt.Sprintf("%s\t%s\t%d/%d\t%s\t%s\t%s", in.ID, labelOrNone(in), in.Pairs.Complete, in.Pairs.Planned,
			armText(in.Control), armText(in.Treatment), speed)
		if stopped != "" {
			line += "\t" + stopped
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// stoppedText says at which look a run of looks stopped, and why, as the
// final table gives it for each intent (the run stops every intent at one
// look): "look 1/3 efficacy (faster)", "look 1/3 futility", "look 3/3";
// "" for a run of one look or a report from before runs took their looks.
// The report is the stopping look's, so its verdict is the one reached.
func stoppedText(rep *report.Report) string {
	l := rep.Looks
	if l == nil || l.Stop == "" {
		return ""
	}
	at := fmt.Sprintf("look %d/%d", l.Look, len(l.Pairs))
	switch l.Stop {
	case report.StopEfficacy:
		return at + " efficacy (" + string(rep.Verdict) + ")"
	case report.StopFutility:
		return at + " futility"
	}
	return at
}

func labelOrNone(in report.Intent) string {
	if in.Label == "" {
		return "no label"
	}
	return string(in.Label)
}

func armText(a report.ArmStats) string { return fmt.Sprintf("%d/%d", a.Correct, a.N) }

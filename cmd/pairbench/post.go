package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/rundir"
)

// postTokenEnv is the environment variable post reads its token from; a
// token never goes on the command line, where other users can read it.
const postTokenEnv = "GITHUB_TOKEN"

// postOptions are the flags of pairbench post.
type postOptions struct {
	Repo    string
	PR      int
	SHA     string
	Report  string
	Link    string
	Failure string
	RunID   string
	APIURL  string
}

// check validates the flags together and returns the pull request.
func (o *postOptions) check() (bot.Target, error) {
	t, err := bot.ParseTarget(o.Repo, o.PR, o.SHA)
	switch {
	case err != nil:
		return t, err
	case (o.Report == "") == (o.Failure == ""):
		return t, errors.New("give exactly one of --report DIR (post a verdict) and --failure REASON (post that the bench failed)")
	case o.Link != "" && !strings.HasPrefix(o.Link, "https://") && !strings.HasPrefix(o.Link, "http://"):
		return t, fmt.Errorf("--link %q: want an http(s) URL", o.Link)
	}
	return t, nil
}

func newPostCmd() *cobra.Command {
	o := postOptions{APIURL: os.Getenv("GITHUB_API_URL")}
	cmd := &cobra.Command{
		Use:   "post --repo OWNER/NAME --pr N --sha SHA (--report DIR | --failure REASON)",
		Short: "Post a run's verdict on its pull request: the sticky comment and the bench label",
		Long:  longHelp("post"),
		Args:  argCount(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			target, err := o.check()
			if err != nil {
				return usageError{err}
			}
			token := os.Getenv(postTokenEnv)
			if token == "" {
				return usageError{fmt.Errorf("post needs a token in $%s", postTokenEnv)}
			}
			client, err := bot.NewTokenClient(token, o.APIURL, nil)
			if err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()

			if o.Failure != "" {
				if err := bot.PostFailure(ctx, client, target, bot.RunID(o.RunID), o.Failure); err != nil {
					return fmt.Errorf("post the failure on %s#%d: %w", o.Repo, o.PR, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "posted on %s#%d: the bench of %s failed\n", o.Repo, o.PR, o.SHA)
				return nil
			}
			rep, err := bench.ReadVerdict(rundir.RunDir{Path: o.Report})
			if err != nil {
				return err
			}
			v := bot.Verdict{RunID: bot.RunID(rep.RunID), Report: rep, Link: o.Link}
			if err := bot.PostVerdict(ctx, client, target, v); err != nil {
				return fmt.Errorf("post the verdict on %s#%d: %w", o.Repo, o.PR, err)
			}
			verdict := string(rep.Verdict)
			if verdict == "" {
				verdict = "no intents"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "posted on %s#%d: %s\n", o.Repo, o.PR, verdict)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", "", "repository of the pull request, OWNER/NAME")
	f.IntVar(&o.PR, "pr", 0, "pull request number")
	f.StringVar(&o.SHA, "sha", "", "head commit the bench ran at (full hex id)")
	f.StringVar(&o.Report, "report", "", "run directory holding report.json (pairbench report writes it)")
	f.StringVar(&o.Link, "link", "", "URL of the full report (report.html), linked from the comment")
	f.StringVar(&o.Failure, "failure", "", "post that the bench failed, with this reason, instead of a verdict")
	f.StringVar(&o.RunID, "run-id", "", "run id named with --failure")
	f.StringVar(&o.APIURL, "api-url", o.APIURL, "GitHub REST API base URL (default $GITHUB_API_URL, else https://api.github.com)")
	return cmd
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/service"
)

// serveOptions are the flags of pairbench serve: the service's settings
// and the template of a local bench.
type serveOptions struct {
	service.Options
	Bench benchOptions
}

func newServeCmd() *cobra.Command {
	o := serveOptions{Options: service.DefaultOptions()}
	o.Bench.Config = o.LocalBench
	addr := "127.0.0.1:8080"
	cmd := &cobra.Command{
		Use:   "serve --store LOCATION (--app-id N --private-key-file KEY | --token-env NAME)",
		Short: "Run the GitHub App webhook service: bench pull requests and post the verdicts",
		Long:  longHelp("serve"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secrets, err := o.Check(os.Getenv, os.ReadFile)
			if err != nil {
				return usageError{err}
			}
			if err := o.Bench.finish(); err != nil {
				return usageError{err}
			}
			log, err := bot.NewLogger(cmd.ErrOrStderr(), o.Bench.logFormat)
			if err != nil {
				return usageError{err}
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			return runServe(cmd.Context(), o, secrets, l, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", addr, "address to listen on")
	f.StringVar(&o.SecretEnv, "webhook-secret-env", o.SecretEnv, "environment variable holding the webhook secret")
	f.Int64Var(&o.AppID, "app-id", 0, "GitHub App id")
	f.StringVar(&o.PrivateKeyFile, "private-key-file", "", "GitHub App private key (PEM)")
	f.StringVar(&o.TokenEnv, "token-env", "", "environment variable holding a plain GitHub token, instead of an App")
	f.StringVar(&o.APIURL, "api-url", o.APIURL, "GitHub REST API root (default $GITHUB_API_URL, else https://api.github.com)")
	f.StringVar(&o.Store, "store", "", "artifact store the benches upload to: a directory or s3://bucket/prefix (see docs/artifacts.md)")
	f.StringVar(&o.Dispatch, "dispatch", o.Dispatch, "where benches run: local (this host) or actions (self-hosted runners)")
	f.StringVar(&o.GitURL, "git-url", o.GitURL, "local backend: clone URL of a registry, {owner} and {repo} replaced")
	hostFlags(cmd, &o.Bench, "local backend: ")
	f.BoolVar(&o.Bench.ExampleSites, "example-sites", false, "local backend: serve pairbench's example sites on loopback (for the example registry)")
	f.StringVar(&o.Workflow, "workflow", o.Workflow, "the registry's workflow file dispatched for a bench")
	f.IntVar(&o.Pairs, "pairs", 0, "pairs per intent for a bench that does not ask (0: the backend's default, 10 for local)")
	f.StringVar(&o.Model, "model", "", "model for a bench that does not ask: scripted or provider/id (empty: the backend's default, scripted for local)")
	f.IntVar(&o.Workers, "workers", o.Workers, "jobs (deliveries, GitHub writes) run at once by this replica")
	f.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long a shutdown may take; jobs cut short run again at the next start")
	f.StringVar(&o.StateDir, "state-dir", o.StateDir, "directory of the service's state (an SQLite database; back it up, see docs/serve.md)")
	f.StringVar(&o.PostgresEnv, "postgres-env", "", "environment variable holding a postgres:// URL: keep the state in PostgreSQL instead, shared by replicas")
	f.StringVar(&o.ReplicaID, "replica-id", o.ReplicaID, "this replica's name, stable across restarts and unique among replicas")
	f.StringVar(&o.PublicURL, "public-url", "", "the service's public https:// address, for report links in comments (empty: no links)")
	f.DurationVar(&o.RunTimeout, "run-timeout", o.RunTimeout, "a bench not finished this long after it started (local run began, workflow dispatched) is failed as vanished")
	f.DurationVar(&o.QueueTimeout, "queue-timeout", o.QueueTimeout, "a bench still waiting to start this long after it was recorded is failed")
	return cmd
}

// runServe runs the service of o on l until ctx ends (service.Run), its
// local benches like o.Bench.
func runServe(ctx context.Context, o serveOptions, secrets service.Secrets, l net.Listener, log *slog.Logger) error {
	o.LocalBench = o.Bench.Config
	err := service.Run(ctx, o.Options, secrets, l, log)
	if se := (*service.SettingError)(nil); errors.As(err, &se) {
		return usageError{err}
	}
	return err
}

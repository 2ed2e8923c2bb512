package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/server"
)

// serveOptions are the flags of pairbench serve.
type serveOptions struct {
	Addr            string
	SecretEnv       string
	AppID           int64
	PrivateKeyFile  string
	TokenEnv        string
	APIURL          string
	Store           string
	Dispatch        string
	Workflow        string
	Pairs           int
	Model           string
	Workers         int
	Queue           int
	ShutdownTimeout time.Duration
	LogFormat       string
	// GitURL is the clone URL template of a registry for the local backend:
	// {owner} and {repo} are replaced.
	GitURL string
	// Bench is the template of a local bench.
	Bench benchOptions
}

// serveSecrets are what serve reads from the environment and files, never
// from flags.
type serveSecrets struct {
	webhook    []byte
	privateKey []byte // GitHub App
	token      string // or a plain token
}

// check validates the flags together and reads the secrets they name.
func (o *serveOptions) check(getenv func(string) string, readFile func(string) ([]byte, error)) (serveSecrets, error) {
	var s serveSecrets
	switch {
	case o.SecretEnv == "":
		return s, errors.New("--webhook-secret-env: name the environment variable holding the webhook secret")
	case getenv(o.SecretEnv) == "":
		return s, fmt.Errorf("$%s is empty: the server refuses to run without a webhook secret", o.SecretEnv)
	case o.Store == "":
		return s, errors.New("--store: give the artifact store the benches upload to (a directory or s3://bucket/prefix)")
	case o.Dispatch != "actions" && o.Dispatch != "local":
		return s, fmt.Errorf("--dispatch %q: want local or actions", o.Dispatch)
	case o.Pairs < 0:
		return s, fmt.Errorf("--pairs %d: want 0 (the backend's default) or more", o.Pairs)
	case o.Workers < 1 || o.Queue < 1:
		return s, fmt.Errorf("--workers %d, --queue %d: want at least 1 each", o.Workers, o.Queue)
	case o.ShutdownTimeout <= 0:
		return s, fmt.Errorf("--shutdown-timeout %v: want a positive duration", o.ShutdownTimeout)
	}
	s.webhook = []byte(getenv(o.SecretEnv))

	app := o.AppID != 0 || o.PrivateKeyFile != ""
	switch {
	case app && o.TokenEnv != "":
		return s, errors.New("give either --app-id with --private-key-file (a GitHub App) or --token-env (a plain token), not both")
	case app && (o.AppID <= 0 || o.PrivateKeyFile == ""):
		return s, errors.New("a GitHub App needs both --app-id and --private-key-file")
	case app:
		key, err := readFile(o.PrivateKeyFile)
		if err != nil {
			return s, fmt.Errorf("--private-key-file: %w", err)
		}
		s.privateKey = key
	case o.TokenEnv != "":
		if s.token = getenv(o.TokenEnv); s.token == "" {
			return s, fmt.Errorf("$%s is empty", o.TokenEnv)
		}
	default:
		return s, errors.New("give --app-id with --private-key-file (a GitHub App) or --token-env (a plain token)")
	}
	return s, nil
}

func newServeCmd() *cobra.Command {
	o := serveOptions{
		Addr:            "127.0.0.1:8080",
		SecretEnv:       "PAIRBENCH_WEBHOOK_SECRET",
		APIURL:          os.Getenv("GITHUB_API_URL"),
		Dispatch:        "local",
		GitURL:          "https://github.com/{owner}/{repo}.git",
		Bench:           defaultBenchOptions(),
		Workflow:        bot.DefaultWorkflow,
		Workers:         4,
		Queue:           256,
		ShutdownTimeout: 30 * time.Second,
		LogFormat:       "text",
	}
	cmd := &cobra.Command{
		Use:   "serve --store LOCATION (--app-id N --private-key-file KEY | --token-env NAME)",
		Short: "Run the GitHub App webhook service: bench pull requests and post the verdicts",
		Long: `serve runs pairbench's GitHub App service. It answers GitHub's webhook
deliveries on POST /webhook (signed with the webhook secret; others are
refused), hands them to the bot, which plans benches for pull requests that
change domain tools and for /bench comments, dispatches them, and posts each
verdict as a check run, a sticky comment and a "bench: <label>" label.
GET /healthz and GET /metrics (Prometheus) are served on the same address.

Secrets never go on the command line: the webhook secret is read from the
environment variable named by --webhook-secret-env (default
PAIRBENCH_WEBHOOK_SECRET), the App's private key from --private-key-file,
and a plain token, if used instead of an App, from the variable named by
--token-env. The server refuses to start without a webhook secret.

Benches run on this host by default (--dispatch local): one at a time, with
the registry read at the pull request's head commit from --git-url through a
bare cache, and the bench flags below. With --dispatch actions they run on
GitHub Actions instead: a workflow_dispatch of --workflow on the registry's
default branch. Either way the runs upload to --store (see docs/artifacts.md),
where the service reads each report.json when the bench ends; S3 credentials
come from the usual AWS environment variables.

On SIGINT or SIGTERM the service stops accepting connections, finishes the
deliveries already queued (for up to --shutdown-timeout) and exits 0;
deliveries it could not finish are logged with their ids and the exit code
is 130 or 143.

Examples:
  PAIRBENCH_WEBHOOK_SECRET=... pairbench serve --addr 127.0.0.1:8080 \
      --app-id 123456 --private-key-file /etc/pairbench/app.pem \
      --store s3://bench-artifacts/runs?region=eu-west-1
  PAIRBENCH_WEBHOOK_SECRET=... GITHUB_TOKEN=... pairbench serve \
      --token-env GITHUB_TOKEN --store /var/lib/pairbench/runs --log-format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secrets, err := o.check(os.Getenv, os.ReadFile)
			if err != nil {
				return usageError{err}
			}
			if err := o.Bench.finish(""); err != nil {
				return usageError{err}
			}
			log, err := newLogger(cmd.ErrOrStderr(), o.LogFormat)
			if err != nil {
				return usageError{err}
			}
			l, err := net.Listen("tcp", o.Addr)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			return runServe(cmd.Context(), o, secrets, l, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", o.Addr, "address to listen on")
	f.StringVar(&o.SecretEnv, "webhook-secret-env", o.SecretEnv, "environment variable holding the webhook secret")
	f.Int64Var(&o.AppID, "app-id", 0, "GitHub App id")
	f.StringVar(&o.PrivateKeyFile, "private-key-file", "", "GitHub App private key (PEM)")
	f.StringVar(&o.TokenEnv, "token-env", "", "environment variable holding a plain GitHub token, instead of an App")
	f.StringVar(&o.APIURL, "api-url", o.APIURL, "GitHub REST API root (default $GITHUB_API_URL, else https://api.github.com)")
	f.StringVar(&o.Store, "store", "", "artifact store the benches upload to: a directory or s3://bucket/prefix (see docs/artifacts.md)")
	f.StringVar(&o.Dispatch, "dispatch", o.Dispatch, "where benches run: local (this host) or actions (self-hosted runners)")
	f.StringVar(&o.GitURL, "git-url", o.GitURL, "local backend: clone URL of a registry, {owner} and {repo} replaced")
	f.IntVar(&o.Bench.Slots, "slots", o.Bench.Slots, "local backend: jobs run at once")
	f.StringVar(&o.Bench.RunsDir, "runs-dir", filepath.Join("runs", "serve"), "local backend: directory holding run directories")
	f.StringVar(&o.Bench.Tools, "tools", "", "local backend: node_modules directory of the pinned Node tools")
	f.DurationVar(&o.Bench.StartDelay, "start-delay", o.Bench.StartDelay, "local backend: start delay after page load, in both arms")
	f.StringVar(&o.Workflow, "workflow", o.Workflow, "the registry's workflow file dispatched for a bench")
	f.IntVar(&o.Pairs, "pairs", 0, "pairs per intent for a bench that does not ask (0: the backend's default, 10 for local)")
	f.StringVar(&o.Model, "model", "", "model for a bench that does not ask: scripted or provider/id (empty: the backend's default, scripted for local)")
	f.IntVar(&o.Workers, "workers", o.Workers, "deliveries handled at once")
	f.IntVar(&o.Queue, "queue", o.Queue, "deliveries waiting for a worker before new ones are refused with 503")
	f.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long a shutdown waits for queued deliveries")
	f.StringVar(&o.LogFormat, "log-format", o.LogFormat, "log format: text or json")
	return cmd
}

// reapEvery is how often the service fails benches that never reported.
const reapEvery = time.Minute

// runServe wires the store, the GitHub clients, the dispatcher, the bot and
// the webhook server, serves on l until ctx ends, then shuts down, draining
// queued deliveries for up to o.ShutdownTimeout.
func runServe(ctx context.Context, o serveOptions, secrets serveSecrets, l net.Listener, log *slog.Logger) error {
	defer l.Close()
	store, err := artifacts.Open(ctx, o.Store)
	if err != nil {
		return usageError{fmt.Errorf("--store: %w", err)}
	}
	if c, ok := store.(interface{ Check(context.Context) error }); ok {
		if err := c.Check(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}

	metrics := server.NewMetrics()
	transport := &githubMetrics{base: http.DefaultTransport, metrics: metrics}
	var clients bot.Clients
	if secrets.privateKey != nil {
		clients, err = bot.NewAppClients(o.AppID, secrets.privateKey, o.APIURL, transport)
	} else {
		clients, err = bot.NewTokenClients(secrets.token, o.APIURL, transport)
	}
	if err != nil {
		return usageError{fmt.Errorf("serve: %w", err)}
	}
	var dispatcher bot.Dispatcher = bot.NewActions(clients, o.Workflow)
	var local *localDispatcher
	if o.Dispatch == "local" {
		bench := o.Bench
		bench.Store = o.Store
		if o.Pairs > 0 {
			bench.Pairs = o.Pairs
		}
		if o.Model != "" {
			bench.Model = o.Model
		}
		benchCtx, stopBenches := context.WithCancel(ctx)
		local = newLocalDispatcher(benchCtx, bench.Config, o.GitURL, log)
		dispatcher = local
		defer func() {
			stopBenches()
			local.wait()
		}()
	}
	b, err := bot.New(bot.Config{
		Clients:    clients,
		Dispatcher: countingDispatcher{dispatcher, o.Dispatch, metrics},
		Store:      store,
		Workflow:   o.Workflow,
		Pairs:      o.Pairs,
		Model:      o.Model,
		Logger:     log,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if local != nil {
		local.bot = b
	}
	srv, err := server.New(server.Config{
		Secret: secrets.webhook,
		Handler: server.HandlerFunc(func(ctx context.Context, d server.Delivery) error {
			return b.Handle(withInstallation(ctx, d.InstallationID), bot.Delivery(d))
		}),
		Events:    bot.Events(),
		Logger:    log,
		Metrics:   metrics,
		Workers:   o.Workers,
		QueueSize: o.Queue,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	var wg sync.WaitGroup
	served := make(chan error, 1)
	wg.Go(func() { served <- srv.Serve(l) })
	reapCtx, stopReaping := context.WithCancel(ctx)
	wg.Go(func() { reap(reapCtx, b, log) })

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping", "cause", context.Cause(ctx))
	case serveErr = <-served: // the listener failed
	}
	stopReaping()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ShutdownTimeout)
	defer cancel()
	shutdownErr := srv.Shutdown(shutdownCtx)
	wg.Wait()
	select {
	case err := <-served: // Serve returned because of Shutdown
		serveErr = err
	default:
	}
	return errors.Join(serveErr, shutdownErr)
}

// reap calls b.Reap every reapEvery until ctx ends.
func reap(ctx context.Context, b *bot.Bot, log *slog.Logger) {
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := b.Reap(ctx); err != nil {
				log.Warn("reaping vanished benches", "err", err)
			}
		}
	}
}

// countingDispatcher counts dispatches in the service's metrics.
type countingDispatcher struct {
	bot.Dispatcher
	backend string
	metrics *server.Metrics
}

func (d countingDispatcher) Dispatch(ctx context.Context, req bot.Request) error {
	err := d.Dispatcher.Dispatch(ctx, req)
	result := "ok"
	if err != nil {
		result = "error"
	}
	d.metrics.Dispatched(d.backend, result)
	return err
}

type installationKey struct{}

// withInstallation notes in ctx the installation a delivery came from, so
// GitHub calls made while handling it are counted against it.
func withInstallation(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, installationKey{}, id)
}

// githubMetrics counts the GitHub REST calls that go through it, by method
// and status, and records the rate limit left for the delivery's
// installation.
type githubMetrics struct {
	base    http.RoundTripper
	metrics *server.Metrics
}

func (g *githubMetrics) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		g.metrics.GitHubCall(req.Method, 0)
		return resp, err
	}
	g.metrics.GitHubCall(req.Method, resp.StatusCode)
	if id, ok := req.Context().Value(installationKey{}).(int64); ok && id > 0 {
		if n, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); err == nil {
			g.metrics.SetRateLimitRemaining(id, n)
		}
	}
	return resp, nil
}

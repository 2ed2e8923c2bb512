// Package service is `pairbench serve`: the GitHub App service's parts
// wired together from the operator's settings (the artifact store, the
// GitHub clients and the metrics of their calls, the backend that runs the
// benches, the bot and its state, the webhook server) and run until their
// context ends, then shut down in time.
package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
)

// Options are the service's settings, as the operator gives them: secrets
// by the name of the environment variable or file that holds them, never
// by value.
type Options struct {
	SecretEnv       string // the variable holding the webhook secret
	AppID           int64
	PrivateKeyFile  string // the App's private key (PEM)
	TokenEnv        string // or the variable holding a plain token
	APIURL          string // GitHub's REST API root ("": api.github.com)
	Store           string // the artifact store: a directory or s3://bucket/prefix
	Dispatch        string // bot.BackendLocal or bot.BackendActions
	Workflow        string // the registry's workflow file (actions)
	Pairs           int    // for a bench that does not ask (0: the backend's default)
	Model           string // for a bench that does not ask ("": the backend's default)
	Workers         int    // GitHub jobs run at once
	ShutdownTimeout time.Duration
	// StateDir holds the embedded SQLite state; PostgresEnv, if set, names
	// the variable holding a Postgres URL to use instead.
	StateDir    string
	PostgresEnv string
	ReplicaID   string
	PublicURL   string // the service's address, for report links ("": none)
	RunTimeout  time.Duration
	// QueueTimeout bounds a bench's wait to start (bot.Config.QueueTimeout).
	QueueTimeout time.Duration
	// GitURL is the clone URL template of a registry for the local backend:
	// {owner} and {repo} are replaced.
	GitURL string
	// LocalBench is the template of a local bench, checked and completed
	// (bench.Config's own checks).
	LocalBench bench.Config
}

// DefaultOptions are the settings of a service told nothing else: the
// webhook secret in $PAIRBENCH_WEBHOOK_SECRET, GitHub's API at
// $GITHUB_API_URL, benches on this host (bot.BackendLocal) cloned from
// github.com, 8 workers, 30 s to shut down, the state in DefaultStateDir,
// the host name as the replica id, a bench failed as vanished 6 h after it
// started or after 24 h waiting to start,
// and local benches like bench.DefaultConfig's, under runs/serve.
func DefaultOptions() Options {
	local := bench.DefaultConfig()
	local.RunsDir = filepath.Join("runs", "serve")
	return Options{
		SecretEnv:       "PAIRBENCH_WEBHOOK_SECRET",
		APIURL:          os.Getenv("GITHUB_API_URL"),
		Dispatch:        bot.BackendLocal,
		GitURL:          "https://github.com/{owner}/{repo}.git",
		Workflow:        bot.DefaultWorkflow,
		Workers:         8,
		ShutdownTimeout: 30 * time.Second,
		StateDir:        DefaultStateDir(),
		ReplicaID:       DefaultReplicaID(),
		RunTimeout:      6 * time.Hour,
		QueueTimeout:    24 * time.Hour,
		LocalBench:      local,
	}
}

// DefaultStateDir is where the service keeps its SQLite state when told
// nothing, never relative to the working directory (which a service manager
// chooses): $STATE_DIRECTORY (systemd's StateDirectory=, the first if it
// lists several), else $XDG_STATE_HOME/pairbench, else
// ~/.local/state/pairbench; "" if there is no home either.
func DefaultStateDir() string {
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); filepath.IsAbs(d) {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "pairbench")
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "pairbench")
	}
	return ""
}

// DefaultReplicaID is the host name, the replica id of a service that is
// given none.
func DefaultReplicaID() string {
	h, err := os.Hostname()
	if err != nil {
		return "pairbench"
	}
	return h
}

// Secrets are what the service reads from the environment and files.
type Secrets struct {
	Webhook    []byte
	PrivateKey []byte // GitHub App
	Token      string // or a plain token
	Postgres   string // the Postgres URL, which holds a password
}

// Check validates the options together and reads the secrets they name
// through getenv and readFile.
func (o *Options) Check(getenv func(string) string, readFile func(string) ([]byte, error)) (Secrets, error) {
	var s Secrets
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
	case o.Workers < 1:
		return s, fmt.Errorf("--workers %d: want at least 1", o.Workers)
	case o.ShutdownTimeout <= 0:
		return s, fmt.Errorf("--shutdown-timeout %v: want a positive duration", o.ShutdownTimeout)
	case o.RunTimeout <= 0:
		return s, fmt.Errorf("--run-timeout %v: want a positive duration", o.RunTimeout)
	case o.QueueTimeout <= 0:
		return s, fmt.Errorf("--queue-timeout %v: want a positive duration", o.QueueTimeout)
	case o.PostgresEnv == "" && o.StateDir == "":
		return s, errors.New("--state-dir: give the directory of the service's state (or --postgres-env)")
	case o.ReplicaID == "":
		return s, errors.New("--replica-id: give this replica a name (the host name, by default)")
	case o.PublicURL != "" && !strings.HasPrefix(o.PublicURL, "https://") && !strings.HasPrefix(o.PublicURL, "http://"):
		return s, fmt.Errorf("--public-url %q: want the service's http(s):// address", o.PublicURL)
	}
	s.Webhook = []byte(getenv(o.SecretEnv))
	if o.PostgresEnv != "" {
		if s.Postgres = getenv(o.PostgresEnv); s.Postgres == "" {
			return s, fmt.Errorf("$%s is empty: set it to the postgres:// URL of the service's database", o.PostgresEnv)
		}
	}

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
		s.PrivateKey = key
	case o.TokenEnv != "":
		if s.Token = getenv(o.TokenEnv); s.Token == "" {
			return s, fmt.Errorf("$%s is empty", o.TokenEnv)
		}
	default:
		return s, errors.New("give --app-id with --private-key-file (a GitHub App) or --token-env (a plain token)")
	}
	return s, nil
}

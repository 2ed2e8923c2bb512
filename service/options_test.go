package service

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validOptions are options Check accepts, with the state in a directory of
// the test's own.
func validOptions(t *testing.T) Options {
	return Options{
		SecretEnv: "SECRET", TokenEnv: "TOKEN", Store: "runs", Dispatch: "actions",
		Workers: 1, ShutdownTimeout: time.Second, StateDir: t.TempDir(), ReplicaID: "test", RunTimeout: time.Hour, QueueTimeout: time.Hour,
	}
}

func TestOptionsCheck(t *testing.T) {
	env := map[string]string{"SECRET": "s3cret", "TOKEN": "ghs_x"}
	getenv := func(k string) string { return env[k] }
	readFile := func(p string) ([]byte, error) {
		if p == "app.pem" {
			return []byte("PEM"), nil
		}
		return nil, os.ErrNotExist
	}

	o := validOptions(t)
	s, err := o.Check(getenv, readFile)
	require.NoError(t, err)
	assert.Equal(t, []byte("s3cret"), s.Webhook)
	assert.Equal(t, "ghs_x", s.Token)

	o = validOptions(t)
	o.TokenEnv, o.AppID, o.PrivateKeyFile = "", 7, "app.pem"
	s, err = o.Check(getenv, readFile)
	require.NoError(t, err)
	assert.Equal(t, []byte("PEM"), s.PrivateKey)

	for name, edit := range map[string]func(*Options){
		"empty secret":       func(o *Options) { o.SecretEnv = "UNSET" },
		"no secret variable": func(o *Options) { o.SecretEnv = "" },
		"no store":           func(o *Options) { o.Store = "" },
		"unknown dispatch":   func(o *Options) { o.Dispatch = "elsewhere" },
		"app and token":      func(o *Options) { o.AppID, o.PrivateKeyFile = 7, "app.pem" },
		"app without key":    func(o *Options) { o.TokenEnv, o.AppID = "", 7 },
		"missing key file":   func(o *Options) { o.TokenEnv, o.AppID, o.PrivateKeyFile = "", 7, "nope.pem" },
		"no credentials":     func(o *Options) { o.TokenEnv = "" },
		"empty token":        func(o *Options) { o.TokenEnv = "UNSET" },
		"no workers":         func(o *Options) { o.Workers = 0 },
		"no shutdown time":   func(o *Options) { o.ShutdownTimeout = 0 },
		"no state":           func(o *Options) { o.StateDir = "" },
		"empty postgres env": func(o *Options) { o.PostgresEnv = "UNSET" },
		"no replica id":      func(o *Options) { o.ReplicaID = "" },
		"bad public url":     func(o *Options) { o.PublicURL = "bench.example.com" },
	} {
		o := validOptions(t)
		edit(&o)
		_, err := o.Check(getenv, readFile)
		assert.Error(t, err, name)
	}
}

// TestDefaultOptionsNeedOnlyWhatTheOperatorMustSay: the defaults pass Check
// once the store and the GitHub credentials are given, and their local bench
// is one bench.Config's own checks accept, kept apart from run's runs.
func TestDefaultOptionsNeedOnlyWhatTheOperatorMustSay(t *testing.T) {
	o := DefaultOptions()
	env := map[string]string{"PAIRBENCH_WEBHOOK_SECRET": "s3cret", "TOKEN": "ghs_x"}
	_, err := o.Check(func(k string) string { return env[k] }, os.ReadFile)
	require.Error(t, err, "no store and no credentials")
	o.Store, o.TokenEnv = t.TempDir(), "TOKEN"
	_, err = o.Check(func(k string) string { return env[k] }, os.ReadFile)
	require.NoError(t, err)
	assert.Equal(t, "local", o.Dispatch)
	local := o.LocalBench
	local.RunID = "pr1-abc" // each bench names its own
	assert.NoError(t, local.Check())
	assert.Equal(t, "runs/serve", o.LocalBench.RunsDir)
}

// TestTheDefaultStateDirIsNotTheWorkingDirectorys: systemd's
// StateDirectory, else the XDG state directory, else ~/.local/state; an
// absolute path whatever the working directory.
func TestTheDefaultStateDirIsNotTheWorkingDirectorys(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "/var/lib/pairbench:/var/lib/other")
	assert.Equal(t, "/var/lib/pairbench", DefaultStateDir())
	assert.Equal(t, "/var/lib/pairbench", DefaultOptions().StateDir)
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("XDG_STATE_HOME", "/home/op/.state")
	assert.Equal(t, "/home/op/.state/pairbench", DefaultStateDir())
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/op")
	assert.Equal(t, "/home/op/.local/state/pairbench", DefaultStateDir())
}

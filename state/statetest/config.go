package statetest

import (
	"testing"

	"github.com/pairbench/pairbench/state"
)

// Dialects are the databases every test of the service's state runs on.
var Dialects = []string{"sqlite", "postgres"}

// Config returns a state.Config for a fresh, empty database of dialect
// ("sqlite" or "postgres"), removed when the test ends, with replica id
// "test".
func Config(t testing.TB, dialect string) state.Config {
	t.Helper()
	cfg := state.Config{ReplicaID: "test"}
	switch dialect {
	case "sqlite":
		cfg.Dir = t.TempDir()
	case "postgres":
		cfg.PostgresURL = Postgres(t)
	default:
		t.Fatalf("statetest: unknown dialect %q", dialect)
	}
	return cfg
}

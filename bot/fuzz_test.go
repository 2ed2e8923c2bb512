package bot

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/state"
)

// noGitHub is a Clients that cannot reach GitHub.
type noGitHub struct{}

var errNoGitHub = errors.New("no GitHub in this test")

func (noGitHub) Client(context.Context, int64) (*github.Client, error) { return nil, errNoGitHub }
func (noGitHub) Login(context.Context) (string, error)                 { return "", errNoGitHub }

// FuzzHandle feeds arbitrary payloads to every event the bot takes: its
// decision must never panic, and it either finishes, refuses the payload
// with a *PayloadError, or stops where it would call GitHub.
func FuzzHandle(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "webhooks", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed payloads: %v", err)
	}
	events := Events()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		data = withoutLinks(f, data)
		event, _, _ := strings.Cut(filepath.Base(file), ".")
		for i, e := range events {
			if e == event {
				f.Add(uint8(i), data)
			}
		}
	}
	f.Add(uint8(0), []byte(`{"action":"opened","pull_request":null}`))
	f.Add(uint8(1), []byte(`{"action":"created","issue":{"pull_request":{}},"comment":{"body":"/bench run"}}`))
	f.Add(uint8(1), []byte(`{"action":"created","comment":{"body":"/bench run"}}`)) // no issue: once a panic

	store, err := artifacts.NewLocal(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	b, err := Open(context.Background(), Config{Clients: noGitHub{}, Backend: BackendActions, Store: store,
		State: state.Config{Dir: f.TempDir(), ReplicaID: "fuzz"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	f.Fuzz(func(t *testing.T, event uint8, payload []byte) {
		ev := events[int(event)%len(events)]
		h := &handling{bot: b, log: b.log, inst: 1, delivery: state.Delivery{Installation: 1, ID: "f", Event: ev, Payload: payload}}
		_, err := h.decide(context.Background())
		var pe *PayloadError
		if err != nil && !errors.As(err, &pe) && !errors.Is(err, errNoGitHub) {
			t.Fatalf("Handle(%s) = %v; want nil, a *PayloadError or the client error", ev, err)
		}
	})
}

// withoutLinks drops the URL fields of a payload: they make up most of its
// size, the bot reads none of them, and large seeds slow the fuzzer down
// (minimising each new input costs one run per byte removed).
func withoutLinks(f *testing.F, data []byte) []byte {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		f.Fatal(err)
	}
	var strip func(v any) any
	strip = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "url" || k == "node_id" || k == "_links" || strings.HasSuffix(k, "_url") {
					delete(v, k)
				} else {
					v[k] = strip(x)
				}
			}
		case []any:
			for i := range v {
				v[i] = strip(v[i])
			}
		}
		return v
	}
	out, err := json.Marshal(strip(v))
	if err != nil {
		f.Fatal(err)
	}
	return out
}

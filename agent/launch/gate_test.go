package launch

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
)

// gated runs a gate with caps in front of a model that answers every POST,
// and returns a client through it, the model's call count and the caps the
// gate stopped the agent at.
func gated(t *testing.T, caps runner.Caps, m *Meter) (func() error, *atomic.Int32, *[]pairbench.Cap) {
	t.Helper()
	var calls atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			calls.Add(1)
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(model.Close)
	var stopped []pairbench.Cap
	g := &gate{caps: caps, meter: m, stop: func(c pairbench.Cap) { stopped = append(stopped, c) }}
	client := &http.Client{Transport: g.wrap(http.DefaultTransport)}
	call := func() error {
		resp, err := client.Post(model.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	return call, &calls, &stopped
}

// TestGateStopsTheTurnPastTheTurnCap lets two turns through and stops the
// agent at the third, which never reaches the model.
func TestGateStopsTheTurnPastTheTurnCap(t *testing.T) {
	m := NewMeter()
	call, calls, stopped := gated(t, runner.Caps{Turns: 2}, m)
	for range 2 {
		require.NoError(t, call())
		m.Turn(0.01)
	}
	require.Error(t, call())
	assert.EqualValues(t, 2, calls.Load(), "the third turn never reached the model")
	assert.Equal(t, []pairbench.Cap{pairbench.CapTurns}, *stopped)
}

// TestGateStopsTheTurnThatWouldPassTheSpendCap spends $0.004 a turn under
// a $0.01 cap: the third turn would pass it, so the agent is stopped after
// two, at $0.008, and never spends past the cap.
func TestGateStopsTheTurnThatWouldPassTheSpendCap(t *testing.T) {
	m := NewMeter()
	call, calls, stopped := gated(t, runner.Caps{SpendUSD: 0.01}, m)
	for i := range 2 {
		require.NoError(t, call())
		m.Turn(0.004 * float64(i+1))
	}
	require.Error(t, call())
	assert.EqualValues(t, 2, calls.Load())
	assert.Equal(t, []pairbench.Cap{pairbench.CapSpend}, *stopped)
}

// TestGateWaitsForTheStreamToCatchUp sends the next request before the
// stream has read the last turn's cost, as an agent does: the gate waits
// for it, and decides on it.
func TestGateWaitsForTheStreamToCatchUp(t *testing.T) {
	m := NewMeter()
	call, calls, stopped := gated(t, runner.Caps{SpendUSD: 0.01}, m)
	require.NoError(t, call())
	go func() {
		time.Sleep(200 * time.Millisecond)
		m.Turn(0.006) // one more like it would pass $0.01
	}()
	start := time.Now()
	require.Error(t, call())
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "it waited for the stream")
	assert.EqualValues(t, 1, calls.Load())
	assert.Equal(t, []pairbench.Cap{pairbench.CapSpend}, *stopped)
}

// TestGateCountsAnsweredTurnsOnly fails the model's first answer: a
// retried request is not a second turn.
func TestGateCountsAnsweredTurnsOnly(t *testing.T) {
	var n atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}
	}))
	defer model.Close()
	g := &gate{caps: runner.Caps{Turns: 1}, meter: NewMeter(), stop: func(pairbench.Cap) {}}
	client := &http.Client{Transport: g.wrap(http.DefaultTransport)}
	for i, want := range []int{http.StatusServiceUnavailable, http.StatusOK} {
		resp, err := client.Post(model.URL+"/v1/messages", "application/json", strings.NewReader("{}"))
		require.NoError(t, err, "request %d", i)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode)
	}
	_, err := client.Post(model.URL+"/v1/messages", "application/json", strings.NewReader("{}"))
	assert.Error(t, err, "the cap's one turn is taken")
	resp, err := client.Get(model.URL + "/v1/models")
	require.NoError(t, err, "what is no model call passes")
	resp.Body.Close()
}

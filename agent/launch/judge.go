package launch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// JudgeConfig says how a Judge reaches its model.
type JudgeConfig struct {
	// HostEnv is where the provider's key is read from (os.Environ()).
	HostEnv []string
	// ScriptedURL is the scripted model's base URL on this host
	// ("http://127.0.0.1:PORT/v1"), for a judge that is the scripted model.
	ScriptedURL string
	// Network is how the egress proxy reaches the model's host.
	Network  Network
	TempRoot string
	Log      *slog.Logger
}

// Judge asks a judge model through an egress proxy of its own, as an
// agent's model is reached: only the model's host is allowed, and the
// request carries a placeholder the proxy swaps for the key, so the key
// is never in pairbench's own requests. It speaks the Anthropic Messages
// API to provider anthropic and OpenAI chat completions to every other
// (the scripted model speaks both). It implements runner.Judge.
type Judge struct{ cfg JudgeConfig }

var _ runner.Judge = (*Judge)(nil)

// NewJudge returns a judge reached as cfg says.
func NewJudge(cfg JudgeConfig) *Judge {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Judge{cfg: cfg}
}

// judgeHosts are the API hosts of the providers a judge is reached at
// without a base URL.
var judgeHosts = map[string]string{"openai": "api.openai.com", "anthropic": "api.anthropic.com"}

// judgeMaxTokens bounds a verdict's length.
const judgeMaxTokens = 2048

// CheckJudge fails, in one line, for a judge model that cannot be reached:
// an unknown provider without a base URL, or a missing key.
func CheckJudge(m rundir.Model, hostEnv []string) error {
	if m.Scripted {
		return nil
	}
	_, _, err := judgeRoute(m, hostEnv)
	return err
}

func judgeRoute(m rundir.Model, hostEnv []string) (Route, string, error) {
	keyEnv := strings.ToUpper(strings.ReplaceAll(m.Provider, "-", "_")) + "_API_KEY"
	if m.KeyEnv != "" {
		keyEnv = m.KeyEnv
	}
	key := Key{Env: keyEnv}
	if m.Provider == "anthropic" {
		key.Headers = []string{"X-Api-Key"}
	}
	r, err := ModelRoute(m, judgeHosts[m.Provider], key, hostEnv)
	if err != nil {
		return r, "", fmt.Errorf("judge: %w", err)
	}
	if m.Scripted {
		r.Secrets = nil // it takes any key, over plain http on this host
	}
	return r, keyEnv, nil
}

// Judge sends req to its model and returns the reply, its tokens and its
// cost at the model's price. The request waits at most req.Caps.Time; a
// reply dearer than req.Caps.SpendUSD is returned with an error (its cost
// is spent all the same).
func (j *Judge) Judge(ctx context.Context, req runner.JudgeRequest) (runner.JudgeReply, error) {
	m := req.Model
	if m.Scripted {
		if j.cfg.ScriptedURL == "" {
			return runner.JudgeReply{}, errors.New("the scripted judge is not running")
		}
		m.BaseURL = j.cfg.ScriptedURL
	}
	price, ok := runner.PriceOf(m)
	if !ok {
		return runner.JudgeReply{}, fmt.Errorf("model %s has no price; give it one so its spend can be capped", m)
	}
	route, keyEnv, err := judgeRoute(m, j.cfg.HostEnv)
	if err != nil {
		return runner.JudgeReply{}, err
	}
	if req.Caps.Time > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Caps.Time)
		defer cancel()
	}
	egress, err := sandbox.NewEgress(ctx, sandbox.EgressConfig{
		Allow: route.Allow, ForwardPorts: route.Forward, Secrets: route.Secrets,
		Resolver: j.cfg.Network.Resolver, UpstreamRoots: j.cfg.Network.UpstreamRoots,
		AllowLoopbackHosts: j.cfg.Network.LoopbackHosts, TempDir: j.cfg.TempRoot, Logger: j.cfg.Log,
	})
	if err != nil {
		return runner.JudgeReply{}, fmt.Errorf("egress: %w", err)
	}
	defer egress.Close()
	key, ok := egress.Placeholder(keyEnv)
	if !ok {
		key = ScriptedKey // the scripted model takes any key
	}
	client, err := throughEgress(egress)
	if err != nil {
		return runner.JudgeReply{}, err
	}
	maxTokens := judgeMaxTokens
	if req.Caps.SpendUSD > 0 && price.Output > 0 {
		// The reply alone may not pass the cap; what the prompt costs is
		// known only once it is counted.
		maxTokens = max(1, min(maxTokens, int(req.Caps.SpendUSD*1e6/price.Output)))
	}
	var reply runner.JudgeReply
	if m.Provider == "anthropic" {
		reply, err = askAnthropic(ctx, client, m, key, req, maxTokens)
	} else {
		reply, err = askOpenAI(ctx, client, m, key, req, maxTokens)
	}
	if err != nil {
		if ctx.Err() != nil && req.Caps.Time > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return reply, fmt.Errorf("no reply within its %s time cap", req.Caps.Time)
		}
		return reply, err
	}
	reply.CostUSD = price.Cost(runner.Usage{Input: reply.InputTokens, Output: reply.OutputTokens})
	if req.Caps.SpendUSD > 0 && reply.CostUSD > req.Caps.SpendUSD {
		return reply, fmt.Errorf("its reply cost $%.4f, over its $%.4f spend cap", reply.CostUSD, req.Caps.SpendUSD)
	}
	return reply, nil
}

// throughEgress is an HTTP client whose every request goes through the
// egress proxy's socket, trusting the egress's CA for the TLS it
// terminates.
func throughEgress(e *sandbox.Egress) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if pem := e.CACertPEM(); pem != nil && !roots.AppendCertsFromPEM(pem) {
		return nil, errors.New("egress: its CA certificate does not parse")
	}
	proxy := &url.URL{Scheme: "http", Host: "egress"}
	return &http.Client{Transport: &http.Transport{
		Proxy: func(*http.Request) (*url.URL, error) { return proxy, nil },
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return sandbox.DialUnix(ctx, e.ProxySocket())
		},
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 15 * time.Second,
	}}, nil
}

// maxReply bounds a judge's response body.
const maxReply = 1 << 20

// post sends body as JSON to base+path with headers and decodes the JSON
// reply into out; a status other than 200 is an error quoting the body.
func post(ctx context.Context, c *http.Client, base, path string, headers map[string]string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	u := strings.TrimSuffix(base, "/") + path
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	resp, err := c.Do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s: %s", u, resp.Status, LastLine(string(data[:min(len(data), 300)])))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: reply is not JSON: %w", u, err)
	}
	return nil
}

func askOpenAI(ctx context.Context, c *http.Client, m rundir.Model, key string, req runner.JudgeRequest, maxTokens int) (runner.JudgeReply, error) {
	base := m.BaseURL
	if base == "" {
		base = "https://" + judgeHosts["openai"] + "/v1"
	}
	body := map[string]any{
		"model": m.ID,
		"messages": []map[string]string{
			{"role": "system", "content": req.System},
			{"role": "user", "content": req.User},
		},
		"max_completion_tokens": maxTokens,
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	err := post(ctx, c, base, "/chat/completions", map[string]string{"Authorization": "Bearer " + key}, body, &out)
	if err != nil {
		return runner.JudgeReply{}, err
	}
	reply := runner.JudgeReply{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens}
	if len(out.Choices) == 0 {
		return reply, errors.New("the reply has no choices")
	}
	reply.Text = out.Choices[0].Message.Content
	return reply, nil
}

func askAnthropic(ctx context.Context, c *http.Client, m rundir.Model, key string, req runner.JudgeRequest, maxTokens int) (runner.JudgeReply, error) {
	base := m.BaseURL
	if base == "" {
		base = "https://" + judgeHosts["anthropic"] + "/v1"
	}
	body := map[string]any{
		"model":      m.ID,
		"system":     req.System,
		"messages":   []map[string]string{{"role": "user", "content": req.User}},
		"max_tokens": maxTokens,
	}
	var out struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	headers := map[string]string{"X-Api-Key": key, "Anthropic-Version": "2023-06-01"}
	if err := post(ctx, c, base, "/messages", headers, body, &out); err != nil {
		return runner.JudgeReply{}, err
	}
	reply := runner.JudgeReply{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens}
	for _, part := range out.Content {
		if part.Type == "text" {
			reply.Text += part.Text
		}
	}
	return reply, nil
}

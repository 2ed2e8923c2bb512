package server_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
)

func TestNewRefusesMissingSecretOrInbox(t *testing.T) {
	_, err := server.New(server.Config{Inbox: &recorder{}})
	assert.ErrorContains(t, err, "secret")
	_, err = server.New(server.Config{Secret: []byte{}, Inbox: &recorder{}})
	assert.ErrorContains(t, err, "secret")
	_, err = server.New(server.Config{Secret: testSecret})
	assert.ErrorContains(t, err, "inbox")
}

func TestWebhookSignatures(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec})
	body := payload(1)
	sha1Sig := func() string {
		m := hmac.New(sha1.New, testSecret)
		m.Write(body)
		return "sha1=" + hex.EncodeToString(m.Sum(nil))
	}()
	cases := []struct {
		name   string
		edit   func(r *http.Request)
		status int
	}{
		{"valid", func(r *http.Request) {}, http.StatusAccepted},
		{"missing", func(r *http.Request) { r.Header.Del("X-Hub-Signature-256") }, http.StatusUnauthorized},
		{"sha1 only", func(r *http.Request) {
			r.Header.Del("X-Hub-Signature-256")
			r.Header.Set("X-Hub-Signature", sha1Sig)
		}, http.StatusUnauthorized},
		{"sha1 in the sha256 header", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", sha1Sig) }, http.StatusUnauthorized},
		{"wrong secret", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", server.Sign([]byte("not the secret"), body))
		}, http.StatusUnauthorized},
		{"signature of another body", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", server.Sign(testSecret, payload(2)))
		}, http.StatusUnauthorized},
		{"no prefix", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", strings.TrimPrefix(server.Sign(testSecret, body), "sha256="))
		}, http.StatusUnauthorized},
		{"not hex", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("zz", 32)) }, http.StatusUnauthorized},
		{"truncated", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", server.Sign(testSecret, body)[:40]) }, http.StatusUnauthorized},
		{"uppercase hex", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", "sha256="+strings.ToUpper(strings.TrimPrefix(server.Sign(testSecret, body), "sha256=")))
		}, http.StatusAccepted},
	}
	for i, c := range cases {
		req := delivery("pull_request", "sig-"+strings.ReplaceAll(c.name, " ", "-"), body)
		c.edit(req)
		w := serve(s.Handler(), req)
		assert.Equal(t, c.status, w.Code, "%d %s: %s", i, c.name, w.Body)
	}
	m := metrics(t, s.Handler())
	assert.Equal(t, "8", metricLine(m, `pairbench_webhook_deliveries_total{event="-",result="bad_signature"}`))

	assert.Equal(t, 1, rec.calls("sig-valid"))
	assert.Equal(t, 1, rec.calls("sig-uppercase-hex"))
	assert.Equal(t, 2, rec.total(), "only correctly signed deliveries reach the handler")
}

func TestWebhookMissingSignatureSaysWhy(t *testing.T) {
	s := newServer(t, server.Config{Inbox: &recorder{}})
	req := delivery("pull_request", "d1", payload(1))
	req.Header.Del("X-Hub-Signature-256")
	w := serve(s.Handler(), req)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Contains(t, w.Body.String(), "X-Hub-Signature-256")
}

func TestWebhookContentType(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec})

	// GitHub's form encoding: payload=<url-escaped JSON>, correctly signed.
	form := []byte("payload=" + url.QueryEscape(string(payload(1))))
	req := delivery("pull_request", "form", form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := serve(s.Handler(), req)
	assert.Equal(t, http.StatusUnsupportedMediaType, w.Code)
	assert.Contains(t, w.Body.String(), "set the webhook's content type to application/json")

	for _, ct := range []string{"", "text/plain", "application/jsonx", "multipart/form-data; boundary=x"} {
		req := delivery("pull_request", "ct", payload(1))
		req.Header.Set("Content-Type", ct)
		w := serve(s.Handler(), req)
		assert.Equal(t, http.StatusUnsupportedMediaType, w.Code, "Content-Type %q", ct)
	}
	req = delivery("pull_request", "charset", payload(1))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	assert.Equal(t, http.StatusAccepted, serve(s.Handler(), req).Code)

	assert.Equal(t, 1, rec.total())
}

func TestWebhookOversizedBody(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec, MaxBodyBytes: 1024})

	big := append(payload(1)[:1], bytes.Repeat([]byte(" "), 2048)...)
	big = append(big, payload(1)[1:]...) // still a valid, signed JSON object
	w := serve(s.Handler(), delivery("pull_request", "declared", big))
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "%s", w.Body)

	// Without a Content-Length the cap applies while reading.
	req := delivery("pull_request", "chunked", big)
	req.ContentLength = -1
	w = serve(s.Handler(), req)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "%s", w.Body)

	assert.Zero(t, rec.total())
}

func TestWebhookDefaultCapIsGitHubs(t *testing.T) {
	s := newServer(t, server.Config{Inbox: &recorder{}})
	body := make([]byte, server.DefaultMaxBodyBytes+1)
	req := delivery("pull_request", "huge", body)
	req.ContentLength = -1
	assert.Equal(t, http.StatusRequestEntityTooLarge, serve(s.Handler(), req).Code)
}

func TestWebhookMalformedRequests(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec})
	for _, body := range []string{"", "not json", "[1,2]", "null", `"text"`, `{"a":`, `{"installation":{"id":"seven"}}`, `{} {}`} {
		w := serve(s.Handler(), delivery("pull_request", "bad-body", []byte(body)))
		assert.Equal(t, http.StatusBadRequest, w.Code, "body %q", body)
	}
	for name, edit := range map[string]func(*http.Request){
		"no event":          func(r *http.Request) { r.Header.Del("X-GitHub-Event") },
		"no delivery id":    func(r *http.Request) { r.Header.Del("X-GitHub-Delivery") },
		"control character": func(r *http.Request) { r.Header.Set("X-GitHub-Delivery", "a\x01b") },
		"long delivery id":  func(r *http.Request) { r.Header.Set("X-GitHub-Delivery", strings.Repeat("a", 200)) },
	} {
		req := delivery("pull_request", "hdr", payload(1))
		edit(req)
		w := serve(s.Handler(), req)
		assert.Equal(t, http.StatusBadRequest, w.Code, name)
	}

	assert.Zero(t, rec.total())
}

func TestWebhookPingAndUnknownEvents(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec, Events: []string{"pull_request", "issue_comment"}})

	w := serve(s.Handler(), delivery("ping", "p1", []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"status":"pong"}`, w.Body.String())

	w = serve(s.Handler(), delivery("star", "s1", payload(1)))
	assert.Equal(t, http.StatusAccepted, w.Code)
	assert.JSONEq(t, `{"status":"ignored","delivery":"s1"}`, w.Body.String())

	w = serve(s.Handler(), delivery("issue_comment", "c1", payload(1)))
	assert.Equal(t, http.StatusAccepted, w.Code)
	assert.JSONEq(t, `{"status":"stored","delivery":"c1"}`, w.Body.String())

	m := metrics(t, s.Handler())
	assert.Equal(t, "1", metricLine(m, `pairbench_webhook_deliveries_total{event="star",result="ignored"}`))
	assert.Equal(t, "1", metricLine(m, `pairbench_webhook_deliveries_total{event="ping",result="ping"}`))

	assert.Equal(t, 1, rec.total())
	assert.Equal(t, 1, rec.calls("c1"))
}

func TestWebhookPassesTheDeliveryThrough(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec})
	body := payload(4242)
	require.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body)).Code)
	require.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("push", "no-installation", []byte(`{"ref":"refs/heads/main"}`))).Code)

	require.Len(t, rec.order, 2)
	byID := map[string]server.Delivery{}
	for _, d := range rec.order {
		byID[d.ID] = d
	}
	d := byID["72d3162e-cc78-11e3-81ab-4c9367dc0958"]
	assert.Equal(t, "pull_request", d.Event)
	assert.EqualValues(t, 4242, d.InstallationID)
	assert.Equal(t, body, d.Payload)
	assert.NotNil(t, d.Logger)
	assert.Zero(t, byID["no-installation"].InstallationID)
}

func TestWebhookAnswersJSON(t *testing.T) {
	s := newServer(t, server.Config{Inbox: &recorder{}})
	req := delivery("pull_request", "j1", payload(1))
	req.Header.Del("X-Hub-Signature-256")
	w := serve(s.Handler(), req)
	var answer map[string]string
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &answer))
	assert.NotEmpty(t, answer["error"])
	assert.Contains(t, w.Header().Get("Content-Type"), "application/json")
}

func TestWebhookMethodAndRoutes(t *testing.T) {
	s := newServer(t, server.Config{Inbox: &recorder{}})
	w := serve(s.Handler(), mustRequest(t, http.MethodGet, "/webhook"))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	w = serve(s.Handler(), mustRequest(t, http.MethodGet, "/nope"))
	assert.Equal(t, http.StatusNotFound, w.Code)
}

func mustRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, nil)
	require.NoError(t, err)
	return req
}

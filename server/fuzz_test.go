package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pairbench/pairbench/server"
)

// FuzzWebhook sends arbitrary requests through the whole webhook handler and
// checks its promises: no panic, a JSON answer with a known status, nothing
// accepted without a valid signature, and nothing queued that is not a
// signed JSON object sent as application/json.
func FuzzWebhook(f *testing.F) {
	f.Add([]byte(`{"action":"opened","installation":{"id":1}}`), "application/json", "pull_request", "id-1", true, "")
	f.Add([]byte(`payload=%7B%7D`), "application/x-www-form-urlencoded", "pull_request", "id-2", true, "")
	f.Add([]byte(`null`), "application/json", "push", "id-3", true, "")
	f.Add([]byte(`{"installation":{"id":"x"}}`), "application/json; charset=utf-8", "issue_comment", "id-4", true, "")
	f.Add([]byte(`{}`), "application/json", "ping", "id-5", false, "sha256=00")
	f.Add([]byte(`{}`), "application/json", "", "", true, "")
	f.Add([]byte(" \n{\"a\":[1,2,{\"b\":null}]}"), "Application/JSON", "star", "id-7", true, "")

	discard := server.InboxFunc(func(context.Context, server.Delivery) (bool, error) { return true, nil })
	s, err := server.New(server.Config{Secret: testSecret, Inbox: discard,
		MaxBodyBytes: 64 << 10, Events: []string{"pull_request", "issue_comment", "push"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Shutdown(f.Context()) })
	h := s.Handler()

	f.Fuzz(func(t *testing.T, body []byte, contentType, event, id string, sign bool, sig string) {
		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", id)
		if sign {
			sig = server.Sign(testSecret, body)
		}
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)

		var answer map[string]string
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
			t.Fatalf("answer %d is not a JSON object: %q", w.Code, w.Body)
		}
		validSig := sig != "" && bytes.EqualFold([]byte(sig), []byte(server.Sign(testSecret, body)))
		switch w.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable:
			if !validSig {
				t.Fatalf("status %d for a request without a valid signature", w.Code)
			}
		case http.StatusUnauthorized:
			if validSig {
				t.Fatalf("401 for a valid signature: %s", answer["error"])
			}
		case http.StatusRequestEntityTooLarge:
			if len(body) <= 64<<10 {
				t.Fatalf("413 for %d bytes", len(body))
			}
		default:
			t.Fatalf("unexpected status %d: %q", w.Code, w.Body)
		}
		if answer["status"] == "queued" {
			mt, _, err := mime.ParseMediaType(contentType)
			if err != nil || mt != "application/json" {
				t.Fatalf("queued a delivery sent as %q", contentType)
			}
			if t := bytes.TrimLeft(body, " \t\r\n"); !json.Valid(body) || len(t) == 0 || t[0] != '{' {
				panic("queued a payload that is not a JSON object: " + string(body))
			}
			if id == "" || event == "" {
				t.Fatalf("queued a delivery without event or id")
			}
		}
	})
}

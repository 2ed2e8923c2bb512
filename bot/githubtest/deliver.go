package githubtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
)

// Deliver posts a webhook delivery to url as GitHub does: the event and the
// delivery id in their headers, the body signed with secret in
// X-Hub-Signature-256 (HMAC-SHA256, computed here, not by the service's
// code). It returns the answer's status, 0 if no answer came.
func Deliver(ctx context.Context, url string, secret []byte, event, id string, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// MustDeliver is Deliver, with the test's context, failing the test unless
// the service accepted the delivery (202).
func MustDeliver(t testing.TB, url string, secret []byte, event, id string, body []byte) {
	t.Helper()
	if status := Deliver(t.Context(), url, secret, event, id, body); status != http.StatusAccepted {
		t.Fatalf("delivery %s (%s) to %s: status %d, want %d", id, event, url, status, http.StatusAccepted)
	}
}

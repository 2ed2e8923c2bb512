package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// Header names GitHub sets on every delivery.
const (
	headerSignature = "X-Hub-Signature-256"
	headerEvent     = "X-GitHub-Event"
	headerDelivery  = "X-GitHub-Delivery"
)

// DefaultMaxBodyBytes is GitHub's cap on a webhook payload (25 MiB).
const DefaultMaxBodyBytes = 25 << 20

// maxHeaderValue bounds the event and delivery id headers, which end up in
// logs and metric labels.
const maxHeaderValue = 128

// rejection is why a request is refused, with the status to answer.
type rejection struct {
	status int
	result string // metrics result label
	msg    string // the answer's text, for whoever configured the hook
}

func reject(status int, result, format string, args ...any) *rejection {
	return &rejection{status: status, result: result, msg: fmt.Sprintf(format, args...)}
}

// decode checks a webhook request whose body has been read in full and
// returns the delivery it carries. The order is fixed: signature first, so an
// unauthenticated sender learns nothing else; then content type, headers and
// payload.
func decode(secret []byte, h http.Header, body []byte) (Delivery, *rejection) {
	if err := verifySignature(secret, body, h.Get(headerSignature)); err != nil {
		return Delivery{}, reject(http.StatusUnauthorized, resultBadSig, "%v", err)
	}
	if err := checkContentType(h.Get("Content-Type")); err != nil {
		return Delivery{}, reject(http.StatusUnsupportedMediaType, resultBadType, "%v", err)
	}
	d := Delivery{Event: h.Get(headerEvent), ID: h.Get(headerDelivery)}
	if err := checkHeaderValue(headerEvent, d.Event); err != nil {
		return Delivery{}, reject(http.StatusBadRequest, resultBadReq, "%v", err)
	}
	if err := checkHeaderValue(headerDelivery, d.ID); err != nil {
		return Delivery{}, reject(http.StatusBadRequest, resultBadReq, "%v", err)
	}
	var envelope struct {
		Installation *struct {
			ID int64 `json:"id"`
		} `json:"installation"`
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Delivery{}, reject(http.StatusBadRequest, resultBadReq, "payload is not a JSON object")
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return Delivery{}, reject(http.StatusBadRequest, resultBadReq, "payload is not a JSON object: %v", err)
	}
	if envelope.Installation != nil {
		d.InstallationID = envelope.Installation.ID
	}
	d.Payload = body
	return d, nil
}

// Signature errors. All answer 401.
var (
	errNoSignature  = errors.New("missing " + headerSignature + " header: configure a webhook secret (SHA-1 signatures are not accepted)")
	errSigFormat    = errors.New(headerSignature + " must be sha256= followed by 64 hex digits")
	errSigMismatch  = errors.New(headerSignature + " does not match the payload: check the webhook secret")
	errEmptySecret  = errors.New("empty webhook secret")
	sigPrefixSHA256 = "sha256="
)

// verifySignature checks header, "sha256=<hex HMAC-SHA256 of body>", in
// constant time. There is no fallback to the SHA-1 header, and an empty
// secret verifies nothing.
func verifySignature(secret, body []byte, header string) error {
	if len(secret) == 0 {
		return errEmptySecret
	}
	if header == "" {
		return errNoSignature
	}
	hexSig, ok := strings.CutPrefix(header, sigPrefixSHA256)
	if !ok || len(hexSig) != 2*sha256.Size {
		return errSigFormat
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return errSigFormat
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errSigMismatch
	}
	return nil
}

// Sign returns the X-Hub-Signature-256 value GitHub sends for body: for
// tests and tools that deliver webhooks.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return sigPrefixSHA256 + hex.EncodeToString(mac.Sum(nil))
}

// checkContentType accepts application/json (with parameters such as
// charset); GitHub's other choice, a form with a payload= field, is refused.
func checkContentType(v string) error {
	mt, _, err := mime.ParseMediaType(v)
	if err == nil && mt == "application/json" {
		return nil
	}
	if mt == "application/x-www-form-urlencoded" {
		return errors.New("form-encoded deliveries are not accepted: set the webhook's content type to application/json")
	}
	return fmt.Errorf("content type %q is not accepted: set the webhook's content type to application/json", v)
}

// checkHeaderValue requires a short printable ASCII header value.
func checkHeaderValue(name, v string) error {
	if v == "" {
		return fmt.Errorf("missing %s header", name)
	}
	if len(v) > maxHeaderValue {
		return fmt.Errorf("%s header longer than %d bytes", name, maxHeaderValue)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%s header has a character outside printable ASCII", name)
		}
	}
	return nil
}

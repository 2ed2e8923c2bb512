// Package site serves the example websites the example registry's intents
// run against. Every site is deterministic (fixed data, no state between
// requests) and served by one handler routed by the Host header, so a
// browser started with --host-resolver-rules="MAP books.example
// 127.0.0.1:PORT, ..." reaches them at their registry URLs
// (http://books.example/...).
package site

import (
	"embed"
	"encoding/json"
	"html/template"
	"net"
	"net/http"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

// Hosts returns the host names the handler serves, sorted.
func Hosts() []string { return []string{"books.example", "weather.example"} }

// New returns the handler for every example site. A request for a host
// Hosts does not list gets 404.
func New() http.Handler {
	tmpl := template.Must(template.New("").Funcs(template.FuncMap{
		"money": money,
	}).ParseFS(templateFS, "templates/*.html"))
	sites := map[string]http.Handler{
		"books.example":   newBooks(tmpl),
		"weather.example": newWeather(tmpl),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		h, ok := sites[strings.ToLower(host)]
		if !ok {
			http.Error(w, "unknown host "+host, http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// render writes the named template as an HTML page.
func render(w http.ResponseWriter, tmpl *template.Template, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := tmpl.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, "template: "+err.Error(), http.StatusInternalServerError)
	}
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

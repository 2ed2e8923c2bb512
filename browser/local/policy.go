package local

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/pairbench/pairbench/rundir"
)

// policyPath is where Chromium reads mandatory policies on Debian; the
// browser's sandbox has this one file there.
const policyPath = "/etc/chromium/policies/managed/pairbench.json"

// noModelsPath holds an empty on-device model configuration, which
// --optimization-guide-manifest-override points Chromium at. Chromium 156
// asks update.googleapis.com for its on-device model manifest (component
// ceofaddefefcbblgcgnibnonglccbfja, "Optimization Guide On Device Models
// Manifest") at every start, as an on-demand component update that
// --disable-component-update, ComponentUpdatesEnabled and
// GenAILocalFoundationalModelSettings leave (the request says
// "updatedisabled" and is sent anyway). With the override it takes its
// models from this file, which names none, and asks nobody.
const noModelsPath = "/etc/chromium/pairbench-no-models.json"

// BlockedURLs are the URL patterns no trial browser opens, in either arm,
// whoever asks (a page, a link, Page.navigate, Target.createTarget): the
// local file system, the browser's own privileged pages and DevTools'
// front end. A refused navigation fails with ERR_BLOCKED_BY_ADMINISTRATOR.
var BlockedURLs = []string{
	"file://*", "filesystem:*", "view-source:*",
	"chrome://*", "chrome-untrusted://*", "chrome-search://*", "chrome-extension://*",
	"devtools://*", "isolated-app://*",
}

// chromiumPolicy is the browser's mandatory policy file: BlockedURLs, every
// download refused (DownloadRestrictions 3; no DevTools command can turn it
// back on), no file chooser, no prediction or built-in DNS client (the
// egress proxy resolves names), no QUIC and no WebRTC over UDP outside the
// proxy.
var chromiumPolicy = func() string {
	b, err := json.Marshal(map[string]any{
		"URLBlocklist":              BlockedURLs,
		"DownloadRestrictions":      3,
		"AllowFileSelectionDialogs": false,
		"PromptForDownloadLocation": false,
		"NetworkPredictionOptions":  2,
		"BuiltInDnsClientEnabled":   false,
		"QuicAllowed":               false,
		"WebRtcIPHandling":          "disable_non_proxied_udp",
		"BrowserSignin":             0,
		"SyncDisabled":              true,
		"PasswordManagerEnabled":    false,
		// Chromium's own traffic to Google, which --disable-background-networking
		// and --disable-component-update leave: component and
		// variations downloads, Safe Browsing lists, metrics.
		"ComponentUpdatesEnabled":                 false,
		"SafeBrowsingProtectionLevel":             0,
		"MetricsReportingEnabled":                 false,
		"UrlKeyedAnonymizedDataCollectionEnabled": false,
		"SpellCheckServiceEnabled":                false,
		"TranslateEnabled":                        false,
		"SearchSuggestEnabled":                    false,
		"BackgroundModeEnabled":                   false,
		"OptimizationGuideFetchingEnabled":        false,
		"DefaultBrowserSettingEnabled":            false,
		// The captive-portal check Chromium makes after a failed
		// navigation (a TLS error): a GET of
		// connectivitycheck.gstatic.com/generate_204. Off with the
		// "resolve navigation errors with a web service" setting.
		"AlternateErrorPagesEnabled": false,
	})
	if err != nil {
		panic(err) // a constant map always encodes
	}
	return string(b)
}()

// Policy describes the confinement and the policy every browser started
// with c runs under, for run.json.
func (c Config) Policy() rundir.BrowserPolicy {
	return rundir.BrowserPolicy{
		Provider:        "local",
		Sandbox:         "bubblewrap",
		Namespaces:      []string{"user", "mount", "pid", "ipc", "uts", "network"},
		ChromiumSandbox: []string{"namespaces", "seccomp-bpf"},
		Egress: rundir.BrowserEgress{
			PublicPorts: []int{80, 443},
			Hosts:       slices.Sorted(maps.Keys(c.Hosts)),
			Never:       "loopback, private, link-local (cloud metadata), CGNAT and every other non-public address, by name or literal",
		},
		BlockedURLs: BlockedURLs,
		Downloads:   "denied",
		DevTools:    "pipe to pairbench; unix socket relayed to the trial's agent sandbox only, through a guard that forwards download commands as deny and refuses those that load code or give a browser context a proxy of its own",
		Writable:    "its profile directory",
	}
}

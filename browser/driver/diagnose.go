package driver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A start page that does not load is explained by its cause, found from
// this host the way the browser's egress reaches the site: the name (a
// --host mapping, or DNS), the address, then TLS with the run's trusted
// CAs. Without that, a page that never loaded shows up later as tools
// that did not register, or as a bare Chromium error code.

// diagnoseTimeout bounds each dial and handshake of a diagnosis.
const diagnoseTimeout = 5 * time.Second

// StartPageError is the error of a start page that did not load: what the
// browser saw (Chromium's error code, or the egress's answer) and, when it
// could be found, the cause.
type StartPageError struct {
	URL string
	// Saw is what the browser got: a Chromium error code such as
	// net::ERR_TUNNEL_CONNECTION_FAILED, or the egress's answer.
	Saw string
	// Cause names what failed (the name, the mapping, the address, TLS)
	// and what to do about it; "" when nothing was found.
	Cause string
}

func (e *StartPageError) Error() string {
	if e.Cause == "" {
		return fmt.Sprintf("start page %s did not load: %s%s", e.URL, e.Saw, chromiumHint(e.Saw))
	}
	return fmt.Sprintf("start page %s did not load: %s (the browser saw %s)", e.URL, e.Cause, e.Saw)
}

// chromiumHint glosses the Chromium error codes a start page most often
// fails with, when the cause could not be found from this host.
func chromiumHint(saw string) string {
	switch {
	case strings.Contains(saw, "ERR_CERT_"), strings.Contains(saw, "ERR_SSL_"):
		return ": the site's TLS certificate is not trusted (a private CA? trust it with --ca-cert FILE)"
	case strings.Contains(saw, "ERR_TUNNEL_CONNECTION_FAILED"), strings.Contains(saw, "ERR_NAME_NOT_RESOLVED"):
		return ": the browser's egress could not reach the site (does its name resolve on this host? is it mapped with --host?)"
	case strings.Contains(saw, "ERR_CONNECTION_REFUSED"), strings.Contains(saw, "ERR_CONNECTION_TIMED_OUT"), strings.Contains(saw, "ERR_ADDRESS_UNREACHABLE"):
		return ": nothing answers at the site's address"
	}
	return ""
}

// diagnose looks for why rawURL did not load, from this host as the
// browser's egress reaches it, and returns the cause or "" when every
// step succeeds (a passing failure, or one past TLS).
func (c Config) diagnose(ctx context.Context, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	var addrs []string
	if mapped, ok := c.Hosts[host]; ok {
		if cause := dialCause(ctx, mapped); cause != "" {
			return fmt.Sprintf("--host maps %s to %s, where %s", host, mapped, cause)
		}
		addrs = []string{mapped}
	} else {
		resolver := c.Resolver
		if resolver == nil {
			resolver = net.DefaultResolver
		}
		wait, cancel := context.WithTimeout(ctx, diagnoseTimeout)
		ips, err := resolver.LookupNetIP(wait, "ip", host)
		cancel()
		if err != nil || len(ips) == 0 {
			return fmt.Sprintf("the name %s does not resolve on this host (%s); %s", host, lookupText(err), c.mappingHint(host))
		}
		var causes []string
		for _, ip := range ips {
			addr := net.JoinHostPort(ip.Unmap().String(), port)
			cause := dialCause(ctx, addr)
			if cause == "" {
				addrs = []string{addr}
				causes = nil
				break
			}
			causes = append(causes, addr+": "+cause)
		}
		if len(causes) > 0 {
			return fmt.Sprintf("%s resolves, but at its address %s", host, strings.Join(causes, "; "))
		}
	}
	if u.Scheme != "https" {
		return ""
	}
	if cause := c.tlsCause(ctx, addrs[0], host); cause != "" {
		return fmt.Sprintf("TLS with %s fails: %s", host, cause)
	}
	return ""
}

// mappingHint says how to point a name the browser cannot resolve at a
// server: the run's mappings, when there are some (a typo is the likely
// cause), else --host and --origin.
func (c Config) mappingHint(host string) string {
	if len(c.Hosts) == 0 {
		return fmt.Sprintf("map it to a server with --host %s=ADDRESS:PORT, or point the registry at another origin with --origin", host)
	}
	return fmt.Sprintf("--host maps only %s, not %s", strings.Join(slices.Sorted(maps.Keys(c.Hosts)), ", "), host)
}

func lookupText(err error) string {
	var dns *net.DNSError
	switch {
	case err == nil:
		return "no addresses"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host"
	case errors.As(err, &dns) && dns.IsTimeout:
		return "the lookup timed out"
	}
	return err.Error()
}

// dialCause dials addr (IP:PORT) and returns "" when it answers, else why
// not, in words.
func dialCause(ctx context.Context, addr string) string {
	d := net.Dialer{Timeout: diagnoseTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		return ""
	}
	var ne net.Error
	switch {
	case strings.Contains(err.Error(), "connection refused"):
		return "nothing listens (connection refused)"
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("nothing answers within %s", diagnoseTimeout)
	}
	return "the address is unreachable: " + err.Error()
}

// tlsCause makes a TLS handshake with addr for host, trusting the system's
// CAs and the run's (CACerts), and returns "" when it succeeds, else why
// not.
func (c Config) tlsCause(ctx context.Context, addr, host string) string {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	for _, cert := range c.CACerts {
		roots.AddCert(cert)
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: diagnoseTimeout},
		Config: &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12}}
	wait, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	conn, err := d.DialContext(wait, "tcp", addr)
	if err == nil {
		conn.Close()
		return ""
	}
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		hint := "trust its CA for the run with --ca-cert FILE"
		if len(c.CACerts) > 0 {
			hint = "none of the --ca-cert CAs signed it"
		}
		return "its certificate is signed by an authority this run does not trust; " + hint
	case errors.As(err, &hostname):
		return fmt.Sprintf("its certificate is not for %s (%v)", host, err)
	case errors.As(err, &invalid):
		return "its certificate is not valid: " + invalid.Error()
	}
	return err.Error()
}

// egressFailure is the start of the page the browser's egress answers with
// when it could not reach a site (sandbox: "upstream ... failed").
const egressFailure = "pairbench egress: upstream "

// startPageFailed returns the error of a start page the browser did not
// load: saw is what it got. The cause is looked for from this host.
func (c Config) startPageFailed(ctx context.Context, rawURL, saw string) error {
	return &StartPageError{URL: rawURL, Saw: saw, Cause: c.diagnose(ctx, rawURL)}
}

// checkNotEgressFailure fails when the page loaded in t is the egress's
// answer that it could not reach the site (the start page at rawURL never
// loaded), with the cause.
func (b *Browser) checkNotEgressFailure(ctx context.Context, t *tab, rawURL string) error {
	var text string
	if err := b.eval(ctx, t, `document.contentType === "text/plain" && document.body ? document.body.innerText.slice(0, 2000) : ""`, &text); err != nil {
		return fmt.Errorf("read the loaded page: %w", err)
	}
	if !strings.HasPrefix(text, egressFailure) {
		return nil
	}
	return b.cfg.startPageFailed(ctx, rawURL, "the egress's answer "+strconv.Quote(strings.TrimSpace(text)))
}

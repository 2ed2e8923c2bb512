package bench

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/intents"
)

// Benching your own or a staging site (docs/registry.md): --host maps a
// name to an address of the operator's, --ca-cert trusts a private CA, and
// --origin points a registry at another origin without editing its files.

// ParseHosts reads Config.Hosts from "name=ADDRESS:PORT" pairs, ADDRESS an
// IP or a host name (localhost:18431, staging.internal:8443) resolved here,
// once; none is a nil map.
func ParseHosts(ctx context.Context, pairs []string) (map[string]string, error) {
	var hosts map[string]string
	for _, h := range pairs {
		name, addr, ok := strings.Cut(h, "=")
		if !ok || name == "" || strings.ContainsAny(name, ", /:") {
			return nil, fmt.Errorf("--host %q: want name=ADDRESS:PORT, e.g. books.example=127.0.0.1:8080 or books.example=localhost:8080", h)
		}
		ap, err := resolveAddr(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("--host %q: %w", h, err)
		}
		if hosts == nil {
			hosts = map[string]string{}
		}
		hosts[strings.ToLower(name)] = ap.String()
	}
	return hosts, nil
}

// resolveAddr reads HOST:PORT, HOST an IP or a name, resolving a name to
// one address (IPv4 first: a local server listening on 127.0.0.1 is the
// common case for localhost).
func resolveAddr(ctx context.Context, addr string) (netip.AddrPort, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: want ADDRESS:PORT", addr)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("address %q: port %q is not a port number", addr, portText)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("address %q: %s does not resolve on this host: %v", addr, host, err)
	}
	slices.SortStableFunc(ips, func(a, b netip.Addr) int {
		return boolRank(b.Unmap().Is4()) - boolRank(a.Unmap().Is4())
	})
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(port)), nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ReadCACerts reads the CAs of a PEM bundle for Config.CACerts (--ca-cert).
func ReadCACerts(path string) ([]*x509.Certificate, error) { return local.ReadCACerts(path) }

// An Origin replaces one origin of a registry by another for a run.
type Origin struct {
	// From is what is replaced: a host (example.com, both schemes, no
	// port) or an origin (https://example.com:8443).
	From string
	// To is the origin put in its place: scheme://host[:port].
	To string
}

// ParseOrigins reads --origin values, FROM=TO with FROM a host or an
// origin and TO an origin (http or https, no path).
func ParseOrigins(pairs []string) ([]Origin, error) {
	var out []Origin
	for _, p := range pairs {
		from, to, ok := strings.Cut(p, "=")
		bad := func(why string) error {
			return fmt.Errorf("--origin %q: %s; want FROM=TO, e.g. example.com=https://staging.example.com", p, why)
		}
		if !ok || from == "" || to == "" {
			return nil, bad("no =")
		}
		t, err := url.Parse(to)
		if err != nil || (t.Scheme != "http" && t.Scheme != "https") || t.Host == "" || strings.Trim(t.Path, "/") != "" || t.RawQuery != "" || t.User != nil {
			return nil, bad("TO must be an http(s) origin, scheme://host[:port], without a path")
		}
		from = strings.ToLower(strings.TrimSuffix(from, "/"))
		if strings.Contains(from, "://") {
			f, err := url.Parse(from)
			if err != nil || (f.Scheme != "http" && f.Scheme != "https") || f.Host == "" || f.Path != "" {
				return nil, bad("FROM must be a host or an http(s) origin")
			}
		} else if strings.ContainsAny(from, "/:*") {
			return nil, bad("FROM must be a host or an http(s) origin")
		}
		out = append(out, Origin{From: from, To: strings.ToLower(t.Scheme) + "://" + strings.ToLower(t.Host)})
	}
	return out, nil
}

// rewrite returns s (a URL or a URL pattern) with its origin replaced when
// it is o.From's, and whether it was.
func (o Origin) rewrite(s string) (string, bool) {
	froms := []string{o.From}
	if !strings.Contains(o.From, "://") {
		froms = []string{"http://" + o.From, "https://" + o.From}
	}
	lower := strings.ToLower(s)
	for _, f := range froms {
		if !strings.HasPrefix(lower, f) {
			continue
		}
		rest := s[len(f):]
		if rest == "" || strings.ContainsAny(rest[:1], "/?#") {
			return o.To + rest, true
		}
	}
	return s, false
}

// applyOrigins rewrites, for the run, every intent's start_url and
// baseline steps' URLs and every domain's start_urls and tools'
// urlPatterns whose origin an Origin replaces. An Origin that matches nothing is an error: a typo would
// otherwise bench the real site.
func applyOrigins(reg *intents.Registry, origins []Origin) error {
	for _, o := range origins {
		used := false
		apply := func(s *string) {
			if out, ok := o.rewrite(*s); ok {
				*s, used = out, true
			}
		}
		for _, in := range reg.Intents {
			apply(&in.StartURL)
			for _, st := range in.Baseline.Steps {
				for k, v := range st.Args {
					if text, ok := v.(string); ok {
						apply(&text)
						st.Args[k] = text
					}
				}
			}
		}
		for _, d := range reg.Domains {
			for i := range d.StartURLs {
				apply(&d.StartURLs[i])
			}
			for ti := range d.Tools {
				for i := range d.Tools[ti].URLPatterns {
					apply(&d.Tools[ti].URLPatterns[i])
				}
			}
		}
		if !used {
			return fmt.Errorf("--origin %s=%s: no intent's start_url and no tool's urlPatterns has the origin %s", o.From, o.To, o.From)
		}
	}
	return nil
}

// originHosts maps the loopback hosts the origins point at (localhost, an
// IP of this host) to their address, so the browser's egress, which
// refuses loopback destinations that are not mapped, lets the run reach a
// server of the operator's on this machine.
func originHosts(ctx context.Context, origins []Origin) (map[string]string, error) {
	hosts := map[string]string{}
	for _, o := range origins {
		u, _ := url.Parse(o.To)
		host := u.Hostname()
		ip, err := netip.ParseAddr(host)
		if host != "localhost" && !strings.HasSuffix(host, ".localhost") && (err != nil || !ip.IsLoopback()) {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		ap, err := resolveAddr(ctx, net.JoinHostPort(host, port))
		if err != nil {
			return nil, fmt.Errorf("--origin %s=%s: %w", o.From, o.To, err)
		}
		hosts[host] = ap.String()
	}
	return hosts, nil
}

// pointAtOrigins applies the run's Origins to reg and maps the loopback
// hosts they point at, beside the run's own mappings (which win).
func (r *Run) pointAtOrigins(ctx context.Context, reg *intents.Registry) error {
	if len(r.cfg.Origins) == 0 {
		return nil
	}
	if err := applyOrigins(reg, r.cfg.Origins); err != nil {
		return err
	}
	extra, err := originHosts(ctx, r.cfg.Origins)
	if err != nil {
		return err
	}
	hosts := maps.Clone(r.hosts)
	if hosts == nil {
		hosts = map[string]string{}
	}
	for h, a := range extra {
		if _, set := hosts[h]; !set {
			hosts[h] = a
		}
	}
	r.hosts = hosts
	return nil
}

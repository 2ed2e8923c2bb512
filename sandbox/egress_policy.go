package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// AllowRule lets the sandbox reach one host, or every subdomain of one, on
// the listed ports.
type AllowRule struct {
	// Host is an exact host name ("api.openai.com"), a wildcard that matches
	// every subdomain but not the name itself ("*.openai.com"), or an IP
	// literal ("127.0.0.1"). IP literals are refused unless listed this way.
	Host string
	// Ports lists the allowed destination ports; empty means 443 only.
	Ports []int
}

// ParseAllowRule parses "HOST", "HOST:PORT" or "HOST:PORT,PORT" ("[::1]:8080"
// for IPv6 literals). Without a port the rule allows 443 only.
func ParseAllowRule(s string) (AllowRule, error) {
	host, ports := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return AllowRule{}, fmt.Errorf("allow rule %q: missing ]", s)
		}
		host, ports = s[1:end], strings.TrimPrefix(s[end+1:], ":")
	} else if h, p, ok := strings.Cut(s, ":"); ok {
		host, ports = h, p
	}
	r := AllowRule{Host: host}
	if ports != "" {
		for _, p := range strings.Split(ports, ",") {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return AllowRule{}, fmt.Errorf("allow rule %q: bad port %q", s, p)
			}
			r.Ports = append(r.Ports, n)
		}
	}
	if err := r.validate(); err != nil {
		return AllowRule{}, err
	}
	return r, nil
}

func (r AllowRule) validate() error {
	h := normalizeHost(r.Host)
	if h == "" || h == "*." || strings.Count(h, "*") > 1 || (strings.Contains(h, "*") && !strings.HasPrefix(h, "*.")) {
		return fmt.Errorf("allow rule host %q: want a name, *.suffix or an IP literal", r.Host)
	}
	if strings.ContainsAny(h, "/:@ ") && !isIPLiteral(h) {
		return fmt.Errorf("allow rule host %q: not a host name", r.Host)
	}
	for _, p := range r.Ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("allow rule %q: bad port %d", r.Host, p)
		}
	}
	return nil
}

// String renders the rule in the form ParseAllowRule accepts.
func (r AllowRule) String() string {
	ports := r.Ports
	if len(ports) == 0 {
		ports = []int{443}
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strings.Join(s, ",")
}

// matchesHost reports whether pattern (exact, *.suffix or IP literal) covers host.
// Both are normalised.
func matchesHost(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	if isIPLiteral(pattern) && isIPLiteral(host) {
		a, _ := netip.ParseAddr(pattern)
		b, _ := netip.ParseAddr(host)
		return a.Unmap() == b.Unmap()
	}
	return pattern == host
}

func (r AllowRule) allows(host string, port int) bool {
	if !matchesHost(normalizeHost(r.Host), host) {
		return false
	}
	if len(r.Ports) == 0 {
		return port == 443
	}
	return slices.Contains(r.Ports, port)
}

// normalizeHost lowercases h, drops a trailing dot and IPv6 brackets.
func normalizeHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

func isIPLiteral(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}

// DeniedError is returned (and rendered as a 403 to the sandbox) when the
// policy refuses a destination or a request.
type DeniedError struct {
	Host   string // the destination host as the sandbox named it
	Port   int
	Reason string // one short clause, e.g. "is not on the allowlist"
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("egress to %s denied: %s", net.JoinHostPort(e.Host, strconv.Itoa(e.Port)), e.Reason)
}

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// policy decides where the sandbox may connect.
type policy struct {
	rules         []AllowRule
	loopbackHosts []string // names allowed to resolve to loopback addresses
	resolver      Resolver
	dialer        net.Dialer
	web           *webPolicy // nil: nothing beyond the rules
}

// check refuses host:port unless an allow rule covers it.
func (p *policy) check(host string, port int) error {
	host = normalizeHost(host)
	for _, r := range p.rules {
		if r.allows(host, port) {
			return nil
		}
	}
	if p.web != nil {
		return p.web.check(host, port)
	}
	for _, r := range p.rules {
		if matchesHost(normalizeHost(r.Host), host) {
			return &DeniedError{Host: host, Port: port, Reason: fmt.Sprintf("port %d is not allowed for this host (allowed: %s)", port, r)}
		}
	}
	if isIPLiteral(host) {
		return &DeniedError{Host: host, Port: port, Reason: "IP literals are refused unless listed"}
	}
	return &DeniedError{Host: host, Port: port, Reason: "host is not on the allowlist"}
}

// resolve checks host:port against the allowlist, resolves it on the host
// and returns the addresses to dial. A name that resolves to any non-public
// address (loopback, private, link-local, metadata, ...) is refused, except
// that a name listed in loopbackHosts may resolve to loopback; an IP literal is returned as is because only an
// explicit allow rule can have let it through check.
func (p *policy) resolve(ctx context.Context, host string, port int) ([]netip.Addr, error) {
	host = normalizeHost(host)
	if err := p.check(host, port); err != nil {
		return nil, err
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if err := p.web.notOwn(host, port, a); err != nil {
			return nil, err
		}
		return []netip.Addr{a}, nil
	}
	if host == "localhost" {
		// What the sandbox's loopback means: 127.0.0.1, where forwarded
		// ports are. Never ::1, where the host may run something else on
		// the same port.
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	if ap, ok := p.web.mapped(host); ok {
		return []netip.Addr{ap.Addr()}, nil
	}
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	relaxed := slices.Contains(p.loopbackHosts, host)
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		if why := nonPublic(a); why != "" && !(relaxed && a.IsLoopback()) {
			return nil, &DeniedError{Host: host, Port: port, Reason: fmt.Sprintf("it resolves to %s, %s address", a, article(why))}
		}
	}
	if err := p.web.notOwn(host, port, addrs...); err != nil {
		return nil, err
	}
	return addrs, nil
}

// dial connects to host:port after resolve, dialling the checked addresses
// (never the name again, so a second DNS answer cannot redirect it).
func (p *policy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	addrs, err := p.resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	if ap, ok := p.web.mapped(normalizeHost(host)); ok {
		return p.dialer.DialContext(ctx, "tcp", ap.String())
	}
	var errs []error
	for _, a := range addrs {
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("dial %s: %w", host, errors.Join(errs...))
}

// dialContext has the shape http.Transport.DialContext wants.
func (p *policy) dialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port, err := splitHostPort(addr, 0)
	if err != nil {
		return nil, err
	}
	return p.dial(ctx, host, port)
}

// splitHostPort splits "host:port"; a missing port becomes def (0 = error).
func splitHostPort(hostport string, def int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == 0 || strings.Count(hostport, ":") > 1 && !strings.HasPrefix(hostport, "[") {
			return "", 0, fmt.Errorf("address %q: %w", hostport, err)
		}
		return normalizeHost(hostport), def, nil
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: bad port", hostport)
	}
	return normalizeHost(host), port, nil
}

// specialPrefixes are non-public ranges netip's predicates do not cover.
var specialPrefixes = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
}

// nonPublic names the kind of a non-public address, or returns "" for a
// public unicast one. Cloud metadata addresses (169.254.169.254,
// fd00:ec2::254) fall under link-local and private.
func nonPublic(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsLoopback():
		return "loopback"
	case a == netip.MustParseAddr("169.254.169.254") || a == netip.MustParseAddr("fd00:ec2::254"):
		return "cloud metadata"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.Is4() && a == netip.MustParseAddr("255.255.255.255"):
		return "broadcast"
	}
	for _, s := range specialPrefixes {
		if s.prefix.Contains(a) {
			return s.what
		}
	}
	return ""
}

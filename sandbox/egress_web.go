package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pairbench/pairbench/internal/sandboxinit"
)

// WebAccess is a browser's way out through the egress proxy: the public
// web, on the web's ports, and a few hosts mapped to fixed addresses. A
// browser checks its own certificates and carries no secret of the run, so
// a web egress relays every CONNECT tunnel as it is (nothing is
// terminated; it has no CA) to the address it checked.
//
// Never reached, whatever the spelling: loopback, private, link-local
// (cloud metadata), CGNAT and every other non-public address (see
// nonPublic), as IP literals and as names resolving to one of them (any one
// answer suffices); "localhost" and *.localhost; single-label (intranet)
// names; and numeric host names that are IP addresses in a non-standard
// spelling (0x7f.1, 2130706433); and any address of the host itself (its
// interfaces' addresses, public ones included: a service bound to 0.0.0.0
// there answers on them), listed when the egress starts and again before
// every dial. Names are resolved by the proxy, on the host, and the checked
// address is the one dialled.
type WebAccess struct {
	// Ports are the ports any public host may be reached on; empty means
	// 80 and 443.
	Ports []int
	// Hosts maps host names to fixed "IP:PORT" addresses that are dialled
	// instead of resolving the name, on whatever port the request names:
	// pairbench's example sites on this host's loopback. Only these hosts
	// may lead to a non-public address.
	Hosts map[string]string
}

// webPolicy is a WebAccess ready to check destinations.
type webPolicy struct {
	ports []int
	hosts map[string]netip.AddrPort
	// own lists the host's own addresses: hostAddrs.
	own func() ([]netip.Addr, error)
}

func newWebPolicy(w WebAccess) (*webPolicy, error) {
	p := &webPolicy{ports: slices.Clone(w.Ports), hosts: map[string]netip.AddrPort{}, own: hostAddrs}
	if _, err := p.own(); err != nil {
		return nil, fmt.Errorf("egress: a web egress must know the host's own addresses to refuse them: %w", err)
	}
	if len(p.ports) == 0 {
		p.ports = []int{80, 443}
	}
	for _, port := range p.ports {
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("egress: web port %d out of range", port)
		}
	}
	for host, addr := range w.Hosts {
		h := normalizeHost(host)
		if err := (AllowRule{Host: h}).validate(); err != nil || strings.Contains(h, "*") || isIPLiteral(h) {
			return nil, fmt.Errorf("egress: mapped host %q: want a host name", host)
		}
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, fmt.Errorf("egress: mapped host %s: address %q: want IP:PORT", host, addr)
		}
		p.hosts[h] = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return p, nil
}

// mapped returns the fixed address of a mapped host; a nil policy maps none.
func (p *webPolicy) mapped(host string) (netip.AddrPort, bool) {
	if p == nil {
		return netip.AddrPort{}, false
	}
	ap, ok := p.hosts[host]
	return ap, ok
}

// check decides on a destination no allow rule covers (host normalised).
// A name that passes still has every address it resolves to checked.
func (p *webPolicy) check(host string, port int) error {
	if _, ok := p.hosts[host]; ok {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if why := nonPublic(a); why != "" {
			return &DeniedError{Host: host, Port: port, Reason: "it is " + article(why) + " address"}
		}
	} else if why := notPublicName(host); why != "" {
		return &DeniedError{Host: host, Port: port, Reason: why}
	}
	if !slices.Contains(p.ports, port) {
		ports := make([]string, len(p.ports))
		for i, n := range p.ports {
			ports[i] = strconv.Itoa(n)
		}
		return &DeniedError{Host: host, Port: port, Reason: fmt.Sprintf("port %d is not a web port (allowed: %s)", port, strings.Join(ports, ", "))}
	}
	return nil
}

// notOwn refuses host:port when any of addrs is an address of the host
// itself. It lists the host's addresses afresh each time (some 30 µs, against
// a dial to the web), so one added since the egress started is refused too;
// a host whose addresses cannot be listed reaches nothing. A nil policy (not
// a web egress) refuses nothing: its allow rules name every destination.
func (p *webPolicy) notOwn(host string, port int, addrs ...netip.Addr) error {
	if p == nil {
		return nil
	}
	own, err := p.own()
	if err != nil {
		return &DeniedError{Host: host, Port: port, Reason: "the host's own addresses cannot be listed: " + err.Error()}
	}
	for _, a := range addrs {
		if slices.Contains(own, a.WithZone("")) {
			return &DeniedError{Host: host, Port: port, Reason: fmt.Sprintf("%s is an address of this host itself", a)}
		}
	}
	return nil
}

// hostAddrs lists the addresses of every interface of the host (of the
// launcher's network namespace, where the egress dials), unmapped.
func hostAddrs() ([]netip.Addr, error) {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list interface addresses: %w", err)
	}
	addrs := make([]netip.Addr, 0, len(ifaddrs))
	for _, ifa := range ifaddrs {
		if n, ok := ifa.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				addrs = append(addrs, a.Unmap())
			}
		}
	}
	return addrs, nil
}

// numericLabel is a host-name label that inet_aton would read as a number.
var numericLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(0x[0-9a-f]*|[0-9]+)$`) })

// notPublicName says why a host name (not an IP literal) can only lead off
// the public web, or returns "".
func notPublicName(host string) string {
	numeric := true
	for _, label := range strings.Split(host, ".") {
		numeric = numeric && numericLabel().MatchString(label)
	}
	switch {
	case numeric:
		return "it is an IP address in a non-standard spelling"
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return "it is a loopback name"
	case !strings.Contains(host, "."):
		return "a single-label name is an intranet host, not the public web"
	}
	return ""
}

// relayTunnel serves a web egress's CONNECT: it dials the checked address
// (a refusal is answered 403, a failure 502), answers 200 and relays bytes
// both ways as they are, until either side closes or the egress does.
func (e *Egress) relayTunnel(w http.ResponseWriter, r *http.Request, host string, port int) {
	t := target{host: host, port: port}
	up, err := e.pol.dial(r.Context(), host, port)
	if err != nil {
		var denied *DeniedError
		if errors.As(err, &denied) {
			e.deny(w, r, denied)
			return
		}
		if e.refusals.Count() {
			e.log.Warn("egress upstream failed", "target", t.String(), "err", ClipForLog(err.Error()))
		}
		http.Error(w, fmt.Sprintf("pairbench egress: upstream %s failed: %v", t, err), http.StatusBadGateway)
		return
	}
	if !e.track(up) {
		up.Close()
		return
	}
	defer e.untrack(up)
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "pairbench egress: cannot tunnel", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	if !e.track(conn) {
		conn.Close()
		return
	}
	defer e.untrack(conn)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	e.log.Debug("egress allowed", "method", r.Method, "target", t.String(), "tunnel", "relayed")
	sandboxinit.Pipe(&tunnelConn{Conn: conn, r: rw.Reader, target: t}, up)
}

// article returns word with "a" or "an" before it.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

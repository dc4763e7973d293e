// Package egress is toolhost's one network allowlist: the allowed_hosts
// grammar, its matching, the address ranges refused by default and the
// checking dialer. A Wasm plugin's http_request (package sandbox) and a
// native server's relay (package sandbox/native) both enforce it, so an
// entry means the same for both kinds of backend.
//
// # Entries
//
// An allowed_hosts entry is a host-name glob as in the Extism manifest
// ("example.com", "*.wikipedia.org"; '*' matches any run of characters, dots
// included; the syntax is doublestar's), optionally followed by ":PORT" to
// restrict the entry to one port ("127.0.0.1:8080", "[::1]:8080",
// "api.github.com:443"). Matching is case-insensitive and ignores a trailing
// dot; IPv4-mapped IPv6 literals match their IPv4 form.
//
// # Refused addresses
//
// Independently of the host match, Policy.DialContext refuses connections to
// loopback, private (RFC 1918, RFC 4193 ULA), link-local (including the cloud
// metadata endpoints 169.254.169.254 and fd00:ec2::254), CGNAT (RFC 6598),
// unspecified, multicast and broadcast addresses, also behind NAT64
// (64:ff9b::/96, RFC 6052). The check is made on the resolved IP at connect
// time, so a public name that resolves (or re-resolves: DNS rebinding) to
// 127.0.0.1 is refused, unless the target matched an entry that names the
// host or IP literally (no glob characters) and, when the entry has a port,
// that port. The exemption is per target and per entry: with
// ["127.0.0.1:8081", "*.test:8082"], a connection to 127.0.0.1:8082, or to a
// *.test name on 8082 that resolves to 127.0.0.1, matched only the glob and
// is refused.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Errors.
var (
	// ErrDenied: the policy refused a target (a host or port outside
	// allowed_hosts, a scheme other than http and https, an address in a
	// refused range that no literal entry names, a redirect to any of
	// those). Every refusal is a *DeniedError wrapping it.
	ErrDenied = errors.New("egress denied")
	// ErrEntry: an allowed_hosts entry is malformed (an empty host, a port
	// outside 0-65535, an invalid glob); the message quotes the entry.
	ErrEntry = errors.New("invalid allowed_hosts entry")
)

// DeniedError is one refusal. Host is the target refused, as "host:port"
// when the refusal is about a connection or the URL's host otherwise; the
// message says why and what to change.
type DeniedError struct {
	Host string
	msg  string
}

func (e *DeniedError) Error() string { return e.msg }

// Unwrap returns ErrDenied.
func (e *DeniedError) Unwrap() error { return ErrDenied }

func denied(host, format string, args ...any) *DeniedError {
	return &DeniedError{Host: host, msg: fmt.Sprintf(format, args...)}
}

// Entry is one parsed allowed_hosts entry.
type Entry struct {
	// Host is the entry's host, lower-cased, without a trailing dot; an IP
	// literal in its canonical form (IPv4-mapped IPv6 unmapped, no
	// brackets).
	Host string
	// Port is the entry's port, "" for any port.
	Port string
	// Glob reports whether Host has glob characters; only a literal
	// (non-glob) entry exempts a target from the refused address ranges.
	Glob bool
}

// Policy is a parsed allowlist. The zero Policy (and a nil *Policy) allows
// nothing. A Policy is immutable and safe for concurrent use.
type Policy struct {
	entries []Entry
	// DialTimeout bounds one DialContext's connect, resolution included
	// (0: 30 seconds). Set it before the Policy is shared.
	DialTimeout time.Duration
}

// NormHost lower-cases host, drops a trailing dot and puts an IP literal
// in its canonical form (IPv4-mapped IPv6 unmapped).
func NormHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}

// New parses allowed_hosts entries (see the package comment). Errors wrap
// ErrEntry and quote the entry. No entries: a Policy that allows nothing.
func New(entries []string) (*Policy, error) {
	p := &Policy{}
	for _, e := range entries {
		host, port := e, ""
		if h, pt, err := net.SplitHostPort(e); err == nil {
			if _, err := strconv.ParseUint(pt, 10, 16); err != nil {
				return nil, fmt.Errorf("allowed_hosts entry %q: invalid port: %w", e, ErrEntry)
			}
			host, port = h, pt
		}
		host = NormHost(host)
		if host == "" {
			return nil, fmt.Errorf("allowed_hosts entry %q: empty host: %w", e, ErrEntry)
		}
		r := Entry{Host: host, Port: port}
		if strings.ContainsAny(host, "*?[]{}") {
			if !doublestar.ValidatePattern(host) {
				return nil, fmt.Errorf("allowed_hosts entry %q: invalid glob: %w", e, ErrEntry)
			}
			r.Glob = true
		}
		p.entries = append(p.entries, r)
	}
	return p, nil
}

// Entries returns the parsed entries, in the order given to New.
func (p *Policy) Entries() []Entry {
	if p == nil {
		return nil
	}
	return append([]Entry(nil), p.entries...)
}

// Empty reports whether the policy allows nothing.
func (p *Policy) Empty() bool { return p == nil || len(p.entries) == 0 }

// Match reports whether host:port matches an entry (allowed), and whether
// a literal (non-glob) entry matched it (literal): only then may a
// connection to it reach a refused address range. port is decimal.
func (p *Policy) Match(host, port string) (allowed, literal bool) {
	if p == nil {
		return false, false
	}
	host = NormHost(host)
	for _, r := range p.entries {
		if r.Port != "" && r.Port != port {
			continue
		}
		if !r.Glob && r.Host == host {
			return true, true
		}
		if r.Glob && doublestar.MatchUnvalidated(r.Host, host) {
			allowed = true
		}
	}
	return allowed, false
}

// Allowed reports whether host:port matches an entry.
func (p *Policy) Allowed(host, port string) bool {
	ok, _ := p.Match(host, port)
	return ok
}

// URLPort is u's port, or the default of its scheme (443 for https, 80
// otherwise).
func URLPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// CheckURL applies the scheme (http and https only) and allowlist rules to
// one URL (a request's or a redirect's target). Errors are *DeniedError.
// The address check happens later, at connect time (DialContext).
func (p *Policy) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return denied(u.Host, "URL %q: scheme %q not allowed (only http and https)", u.Redacted(), u.Scheme)
	}
	if !p.Allowed(u.Hostname(), URLPort(u)) {
		return denied(u.Host, "host %q is not in allowed_hosts (URL %q); add it to allowed_hosts to permit it", u.Host, u.Redacted())
	}
	return nil
}

// MaxRedirects is the number of redirects CheckRedirect follows.
const MaxRedirects = 10

// CheckRedirect is an http.Client's CheckRedirect: it stops after
// MaxRedirects and re-checks every redirect's URL (CheckURL). Errors are
// *DeniedError.
func (p *Policy) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return denied(req.URL.Host, "stopped after %d redirects (last %q)", MaxRedirects, req.URL.Redacted())
	}
	if err := p.CheckURL(req.URL); err != nil {
		return denied(req.URL.Host, "redirect from %q refused: %v", via[len(via)-1].URL.Redacted(), err)
	}
	return nil
}

var refusedPrefixes = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT (RFC 6598)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private (RFC 4193 ULA)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// RefusedReason says why ip is refused by default ("loopback", "cloud
// metadata", "private (RFC 1918)", ...), or "" when it is a public
// address.
func RefusedReason(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, r := range refusedPrefixes {
		if r.prefix.Contains(ip) {
			return r.why
		}
	}
	return ""
}

// DialContext connects to addr ("host:port") on network ("tcp", "tcp4",
// "tcp6") when the policy allows it: addr must match an entry (Match), and
// every address it resolves to is checked at connect time (a refused range
// only with a literal entry). A refusal is a *DeniedError; other errors
// are the net package's.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ok, literal := p.Match(host, port)
	if !ok {
		return nil, denied(addr, "host %q is not in allowed_hosts", addr)
	}
	timeout := 30 * time.Second
	if p.DialTimeout > 0 {
		timeout = p.DialTimeout
	}
	d := net.Dialer{
		Timeout: timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			h, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(h)
			if err != nil {
				return err
			}
			if literal {
				return nil
			}
			if why := RefusedReason(ip); why != "" {
				return denied(addr, "%s resolves to %s, a %s address; such addresses are refused unless the target matches an allowed_hosts entry that names this host (or IP) and port explicitly (no glob)", addr, ip, why)
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, addr)
}

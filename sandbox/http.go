package sandbox

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

// httpPolicy decides which URLs a plugin's http_request may reach.
//
// allowed_hosts entries are host-name globs as in the Extism manifest
// ("example.com", "*.wikipedia.org"; '*' matches any run of characters,
// dots included), optionally followed by ":PORT" to restrict the entry to one
// port ("127.0.0.1:8080", "[::1]:8080"). Matching is case-insensitive and
// ignores a trailing dot.
//
// Independently of the host match, the dialer refuses connections to
// loopback, private (RFC 1918, RFC 4193 ULA), link-local (incl. the cloud
// metadata endpoints 169.254.169.254 and fd00:ec2::254), CGNAT (RFC 6598),
// unspecified, multicast and broadcast addresses — checked on the resolved IP
// at connect time, so a public name that resolves (or re-resolves: DNS
// rebinding) to 127.0.0.1 is refused — unless the request's host:port matched
// an allowed_hosts entry that names the host or IP literally (no glob
// characters) and, when the entry has a port, that port. The exemption is
// per request and per entry: with ["127.0.0.1:8081", "*.test:8082"], a
// request to 127.0.0.1:8082, or to a *.test name on 8082 that resolves to
// 127.0.0.1, matched only the glob and is refused.
type httpPolicy struct {
	rules []hostRule
}

type hostRule struct {
	pattern string
	glob    bool   // pattern has glob characters (else it is a literal)
	port    string // "" = any port
}

func normHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}

func newHTTPPolicy(entries []string) (*httpPolicy, error) {
	p := &httpPolicy{}
	for _, e := range entries {
		host, port := e, ""
		if h, pt, err := net.SplitHostPort(e); err == nil {
			if _, err := strconv.ParseUint(pt, 10, 16); err != nil {
				return nil, fmt.Errorf("allowed_hosts entry %q: invalid port", e)
			}
			host, port = h, pt
		}
		host = normHost(host)
		if host == "" {
			return nil, fmt.Errorf("allowed_hosts entry %q: empty host", e)
		}
		r := hostRule{pattern: host, port: port}
		if strings.ContainsAny(host, "*?[]{}") {
			if !doublestar.ValidatePattern(host) {
				return nil, fmt.Errorf("allowed_hosts entry %q: invalid glob", e)
			}
			r.glob = true
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// allowed reports whether host:port matches an allowed_hosts entry.
func (p *httpPolicy) allowed(host, port string) bool {
	ok, _ := p.match(host, port)
	return ok
}

// match reports whether host:port matches an allowed_hosts entry, and
// whether a literal (non-glob) entry matched it: only then may the
// connection go to a refused address range.
func (p *httpPolicy) match(host, port string) (allowed, literal bool) {
	host = normHost(host)
	for _, r := range p.rules {
		if r.port != "" && r.port != port {
			continue
		}
		if !r.glob && r.pattern == host {
			return true, true
		}
		if r.glob && doublestar.MatchUnvalidated(r.pattern, host) {
			allowed = true
		}
	}
	return allowed, false
}

// deniedError is a policy refusal; it wraps ErrHostDenied.
type deniedError struct{ msg string }

func (e *deniedError) Error() string { return e.msg }
func (e *deniedError) Unwrap() error { return ErrHostDenied }

func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// checkURL applies the scheme and allowlist rules to one URL (the first or a
// redirect target).
func (p *httpPolicy) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &deniedError{fmt.Sprintf("URL %q: scheme %q not allowed (only http and https)", u.Redacted(), u.Scheme)}
	}
	if !p.allowed(u.Hostname(), urlPort(u)) {
		return &deniedError{fmt.Sprintf("host %q is not in allowed_hosts (URL %q); add it to the plugin's allowed_hosts to permit it", u.Host, u.Redacted())}
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

// refusedReason says why ip is refused by default, or "" if it is public.
func refusedReason(ip netip.Addr) string {
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

// newHTTPClient returns the client behind a plugin's http_request. It never
// uses a proxy (a proxy would hide the destination from the address check),
// re-checks the allowlist on every redirect (at most 10) and at every dial,
// and checks the resolved address of every connection.
func newHTTPClient(p *httpPolicy) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ok, explicit := p.match(host, port)
		if !ok {
			return nil, &deniedError{fmt.Sprintf("host %q is not in allowed_hosts", addr)}
		}
		d := net.Dialer{
			Timeout: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				h, _, err := net.SplitHostPort(address)
				if err != nil {
					return err
				}
				ip, err := netip.ParseAddr(h)
				if err != nil {
					return err
				}
				if explicit {
					return nil
				}
				if why := refusedReason(ip); why != "" {
					return &deniedError{fmt.Sprintf("%s resolves to %s, a %s address; such addresses are refused unless the request matches an allowed_hosts entry that names this host (or IP) and port explicitly (no glob)", addr, ip, why)}
				}
				return nil
			},
		}
		return d.DialContext(ctx, network, addr)
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return &deniedError{fmt.Sprintf("stopped after 10 redirects (last %q)", req.URL.Redacted())}
			}
			if err := p.checkURL(req.URL); err != nil {
				return &deniedError{fmt.Sprintf("redirect from %q refused: %v", via[len(via)-1].URL.Redacted(), err)}
			}
			return nil
		},
	}
}

// asDenied finds a policy refusal in an HTTP client error chain.
func asDenied(err error) (*deniedError, bool) {
	var d *deniedError
	ok := errors.As(err, &d)
	return d, ok
}

package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestNewRejectsBadEntries(t *testing.T) {
	for _, tc := range []struct{ entry, msg string }{
		{"a.com:99999", "invalid port"},
		{"a.com:x", "invalid port"},
		{":80", "empty host"},
		{"", "empty host"},
		{"*.{a,b", "invalid glob"},
	} {
		_, err := New([]string{"ok.com", tc.entry})
		if !errors.Is(err, ErrEntry) || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), `"`+tc.entry+`"`) {
			t.Errorf("New(%q) = %v, want ErrEntry with %q quoting the entry", tc.entry, err, tc.msg)
		}
	}
}

func TestMatch(t *testing.T) {
	p, err := New([]string{"Example.COM.", "*.wiki.org", "127.0.0.1:8081", "[::1]:8082", "*.test:8083", "::ffff:10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, port       string
		allowed, literal bool
	}{
		{"example.com", "443", true, true},
		{"EXAMPLE.com.", "80", true, true},
		{"sub.example.com", "443", false, false},
		{"en.wiki.org", "443", true, false},
		{"a.b.wiki.org", "443", true, false},
		{"wiki.org", "443", false, false},
		{"127.0.0.1", "8081", true, true},
		{"127.0.0.1", "8082", false, false},
		{"::1", "8082", true, true},
		{"0:0:0:0:0:0:0:1", "8082", true, true},
		{"x.test", "8083", true, false},
		{"x.test", "8084", false, false},
		{"10.0.0.1", "1", true, true},
		{"::ffff:127.0.0.1", "8081", true, true},
	} {
		a, l := p.Match(tc.host, tc.port)
		if a != tc.allowed || l != tc.literal {
			t.Errorf("Match(%q, %q) = %v, %v; want %v, %v", tc.host, tc.port, a, l, tc.allowed, tc.literal)
		}
	}
	var nilp *Policy
	if a, _ := nilp.Match("example.com", "80"); a || !nilp.Empty() {
		t.Error("a nil Policy allowed something")
	}
	if got := len(p.Entries()); got != 6 {
		t.Errorf("Entries: %d, want 6", got)
	}
}

func TestRefusedReason(t *testing.T) {
	for ip, want := range map[string]string{
		"169.254.169.254":       "cloud metadata",
		"fd00:ec2::254":         "cloud metadata",
		"127.0.0.2":             "loopback",
		"::1":                   "loopback",
		"::ffff:127.0.0.1":      "loopback",
		"64:ff9b::7f00:1":       "loopback",
		"10.1.2.3":              "private (RFC 1918)",
		"172.31.0.1":            "private (RFC 1918)",
		"192.168.1.1":           "private (RFC 1918)",
		"100.64.0.1":            "CGNAT (RFC 6598)",
		"fe80::1":               "link-local",
		"fc00::1":               "private (RFC 4193 ULA)",
		"224.0.0.1":             "multicast",
		"255.255.255.255":       "broadcast",
		"0.0.0.0":               "unspecified",
		"::":                    "unspecified",
		"93.184.215.14":         "",
		"2606:2800:21f:cb07::1": "",
	} {
		if got := RefusedReason(netip.MustParseAddr(ip)); got != want {
			t.Errorf("RefusedReason(%s) = %q, want %q", ip, got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	p, _ := New([]string{"example.com", "127.0.0.1:8081"})
	for _, tc := range []struct{ url, msg string }{
		{"http://example.com/x", ""},
		{"https://example.com/x", ""},
		{"http://127.0.0.1:8081/", ""},
		{"http://127.0.0.1/", "not in allowed_hosts"},
		{"https://127.0.0.1:8082/", "not in allowed_hosts"},
		{"file:///etc/passwd", "scheme"},
		{"ftp://example.com/", "scheme"},
		{"http://other.com/", "not in allowed_hosts"},
	} {
		u, _ := url.Parse(tc.url)
		err := p.CheckURL(u)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("CheckURL(%s): %v", tc.url, err)
			}
			continue
		}
		var d *DeniedError
		if !errors.As(err, &d) || !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("CheckURL(%s) = %v, want a DeniedError with %q", tc.url, err, tc.msg)
		}
	}
}

// TestDialContext: the resolved-address check and the literal exemption,
// against a real listener on the host's loopback.
func TestDialContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect-out":
			http.Redirect(w, r, "http://denied.example/", http.StatusFound)
		case "/redirect-loop":
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := New([]string{"127.0.0.1:" + port, "local*:" + port, "169.254.169.254"})
	ctx := context.Background()

	c, err := p.DialContext(ctx, "tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("literal loopback entry: %v", err)
	}
	c.Close()
	for _, tc := range []struct{ addr, msg string }{
		{"localhost:" + port, "loopback"},               // glob match, resolves to loopback
		{"127.0.0.1:1", "not in allowed_hosts"},         // port not listed
		{"169.254.169.254:80", ""},                      // literal: exempt (connect itself fails or times out; not refused)
		{"[::ffff:127.0.0.1]:" + port, ""},              // same literal entry, mapped form
		{"metadata.google.internal:80", "not in allow"}, // not listed
	} {
		c, err := p.DialContext(ctx, "tcp", tc.addr)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("DialContext(%s): %v", tc.addr, err)
			} else {
				c.Close()
			}
			continue
		}
		var d *DeniedError
		if !errors.As(err, &d) || !strings.Contains(err.Error(), tc.msg) || d.Host != tc.addr {
			t.Errorf("DialContext(%s) = %v, want a DeniedError for %s with %q", tc.addr, err, tc.addr, tc.msg)
		}
	}

	client := &http.Client{Transport: &http.Transport{DialContext: p.DialContext}, CheckRedirect: p.CheckRedirect}
	defer client.CloseIdleConnections()
	for path, msg := range map[string]string{"/redirect-out": "redirect from", "/redirect-loop": "stopped after 10 redirects"} {
		_, err := client.Get(srv.URL + path)
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), msg) {
			t.Errorf("GET %s = %v, want ErrDenied with %q", path, err, msg)
		}
	}
}

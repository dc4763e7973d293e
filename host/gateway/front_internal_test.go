package gateway

import (
	"net"
	"testing"
)

// TestPeerOf: the per-peer connection limit counts IPv4 addresses one by
// one (IPv4-mapped IPv6 as IPv4) and IPv6 addresses by /64.
func TestPeerOf(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:80", "127.0.0.1"},
		{"[::ffff:10.0.0.7]:80", "10.0.0.7"},
		{"[2001:db8:1:2:aaaa::1]:80", "2001:db8:1:2::"},
		{"[2001:db8:1:2:bbbb::9]:443", "2001:db8:1:2::"},
		{"[::1]:80", "::"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := peerOf(a).String(); got != tc.want {
			t.Errorf("peerOf(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

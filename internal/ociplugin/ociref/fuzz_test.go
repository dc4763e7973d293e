package ociref

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: a configuration's path is untrusted text. Parse never panics,
// fails only with ErrRef, and what it accepts round-trips through Name and
// never allows plain HTTP off loopback.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"oci://ghcr.io/a/b:1", "oci://ghcr.io/a/b@sha256:" + strings.Repeat("a", 64), "oci+http://127.0.0.1:5000/p/t:1",
		"oci+http://[::1]:1/a:b", "oci://localhost/a:b", "oci://a/b", "oci://x.y/a:b@sha256:", "oci+http://10.0.0.1/a:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrRef) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrRef", s, err)
			}
			return
		}
		if r.PlainHTTP && !Loopback(r.Registry) {
			t.Fatalf("Parse(%q) allows plain HTTP to %s", s, r.Registry)
		}
		if (r.Tag == "") == (r.Digest == "") {
			t.Fatalf("Parse(%q) = %+v: want exactly one of tag and digest", s, r)
		}
		scheme := Scheme
		if r.PlainHTTP {
			scheme = SchemeHTTP
		}
		r2, err := Parse(scheme + r.Name())
		if err != nil || r2.Name() != r.Name() {
			t.Fatalf("Parse(%q).Name() = %q does not round-trip: %+v, %v", s, r.Name(), r2, err)
		}
	})
}

// Package ociref parses the OCI references a [plugins.NAME] path may hold
// (oci://REGISTRY/REPO:TAG, oci://REGISTRY/REPO@sha256:HEX and their
// oci+http:// forms). It is split from package ociplugin so that package
// config can validate a reference without importing a registry client.
package ociref

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// The schemes of a plugin path that names an OCI artifact instead of a file.
const (
	// Scheme reaches the registry over HTTPS, verified with the system's
	// roots (the default of a registry: OCI Distribution Spec v1.1).
	Scheme = "oci://"
	// SchemeHTTP reaches the registry over plain HTTP. It is accepted only
	// for a loopback registry (localhost, 127.0.0.0/8, ::1): a development
	// registry, or the in-process one of the tests.
	SchemeHTTP = "oci+http://"
)

// ErrRef: the reference is malformed, has no explicit registry or no tag or
// digest, or uses plain HTTP to a registry that is not on loopback.
var ErrRef = errors.New("invalid OCI reference")

// Ref is a parsed reference.
type Ref struct {
	// Raw is the reference as written, with its scheme.
	Raw string
	// PlainHTTP: the scheme is SchemeHTTP.
	PlainHTTP bool
	// Registry is REGISTRY (host[:port]); Repository is REPO.
	Registry, Repository string
	// Tag is TAG, empty for a reference by digest; Digest is
	// "sha256:HEX", empty for a reference by tag.
	Tag, Digest string
}

// Is reports whether path names an OCI artifact (it starts with Scheme or
// SchemeHTTP) rather than a file.
func Is(path string) bool {
	return strings.HasPrefix(path, Scheme) || strings.HasPrefix(path, SchemeHTTP)
}

// Parse parses s: oci://REGISTRY/REPO:TAG, oci://REGISTRY/REPO@sha256:HEX
// (a tag before @ is allowed and ignored, as by docker), or the same with
// oci+http://. REGISTRY is required (no Docker Hub default) and so is a tag
// or a digest (no "latest" default), so that a configuration names exactly
// what it runs. Errors wrap ErrRef and say what to write instead.
func Parse(s string) (Ref, error) {
	r := Ref{Raw: s}
	var rest string
	switch {
	case strings.HasPrefix(s, Scheme):
		rest = s[len(Scheme):]
	case strings.HasPrefix(s, SchemeHTTP):
		rest, r.PlainHTTP = s[len(SchemeHTTP):], true
	default:
		return Ref{}, fmt.Errorf("%q: %w: write %sREGISTRY/REPO:TAG or %sREGISTRY/REPO@sha256:DIGEST", s, ErrRef, Scheme, Scheme)
	}
	if i := strings.IndexByte(rest, '/'); i <= 0 || !strings.ContainsAny(rest[:i], ".:") && rest[:i] != "localhost" {
		return Ref{}, fmt.Errorf("%q: %w: the registry is missing: write %sREGISTRY/REPO:TAG (for Docker Hub, REGISTRY is docker.io)", s, ErrRef, Scheme)
	}
	if last := rest[strings.LastIndexByte(rest, '/')+1:]; !strings.ContainsAny(last, ":@") {
		return Ref{}, fmt.Errorf("%q: %w: no tag or digest: write %s:TAG or %s@sha256:DIGEST (there is no default tag)", s, ErrRef, s, s)
	}
	ref, err := name.ParseReference(rest, name.StrictValidation)
	if err != nil {
		return Ref{}, fmt.Errorf("%q: %w: %v (write %sREGISTRY/REPO:TAG or %sREGISTRY/REPO@sha256:DIGEST)", s, ErrRef, err, Scheme, Scheme)
	}
	r.Registry = ref.Context().RegistryStr()
	r.Repository = ref.Context().RepositoryStr()
	switch v := ref.(type) {
	case name.Tag:
		r.Tag = v.TagStr()
	case name.Digest:
		r.Digest = v.DigestStr()
		if !strings.HasPrefix(r.Digest, "sha256:") {
			return Ref{}, fmt.Errorf("%q: %w: only sha256 digests are supported", s, ErrRef)
		}
	}
	if r.PlainHTTP && !Loopback(r.Registry) {
		return Ref{}, fmt.Errorf("%q: %w: plain HTTP (%s) is only for a registry on loopback (localhost, 127.0.0.1, [::1]); use %s for %s", s, ErrRef, SchemeHTTP, Scheme, r.Registry)
	}
	return r, nil
}

// Name is the reference without its scheme: REGISTRY/REPO:TAG or
// REGISTRY/REPO@sha256:HEX.
func (r Ref) Name() string {
	if r.Digest != "" {
		return r.Registry + "/" + r.Repository + "@" + r.Digest
	}
	return r.Registry + "/" + r.Repository + ":" + r.Tag
}

// String returns Raw.
func (r Ref) String() string { return r.Raw }

// Loopback reports whether a registry host[:port] is on loopback:
// "localhost" or a loopback IP literal.
func Loopback(registry string) bool {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

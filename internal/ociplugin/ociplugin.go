// Package ociplugin pulls WebAssembly plugins from OCI registries into a
// content-addressed cache, and pushes them (toolhost pull, push, and a
// [plugins.NAME] path of oci://REGISTRY/REPO:TAG).
//
// An artifact is an OCI image manifest (OCI Image Spec v1.1, or Docker's
// schema 2, or an index whose entry for wasip1/wasm or linux/amd64 is
// one) with one of:
//
//   - a layer of a WebAssembly media type (MediaTypeWasmLayer, the CNCF
//     "Wasm OCI artifact" layout, which Wassette uses and which
//     hyper-mcp loads too: it accepts any layer that is a raw module), or
//   - image layers (tar, tar+gzip; OCI or Docker) holding plugin.wasm,
//     the layout of hyper-mcp's published plugins (a "FROM scratch" image
//     with /plugin.wasm): the layer holding /plugin.wasm is used, else
//     the one holding a file plugin.wasm, else the one .wasm file.
//
// Push writes the first layout: config MediaTypeWasmConfig, one layer
// MediaTypeWasmLayer.
//
// Pulling checks every byte: the manifest is read up to Options.MaxManifest,
// the layer up to its descriptor's size, which may not exceed
// Options.MaxLayer, and its SHA-256 must be the descriptor's digest. The
// module is stored as CacheDir/oci/sha256/HEX.wasm (HEX the module's
// SHA-256; mode 0600, written to a temporary file and renamed), and the
// reference's resolution (manifest and module digest) as a small file under
// CacheDir/oci/refs, so that a start while the registry is unreachable runs
// the module last resolved for that reference (Result.Offline).
//
// Every request has a deadline (Options.Timeout); credentials come from the
// Docker configuration (~/.docker/config.json, $DOCKER_CONFIG, credential
// helpers) through go-containerregistry's default keychain, or none.
package ociplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
)

// Media types. A pulled artifact's wasm layer may have any of
// WasmLayerTypes, or be an image layer (ImageLayerTypes) holding
// plugin.wasm; Push uses MediaTypeWasmConfig and MediaTypeWasmLayer.
const (
	// MediaTypeWasmConfig is the config of a Wasm artifact (CNCF TAG
	// Runtime, "Wasm OCI Artifact layout").
	MediaTypeWasmConfig = "application/vnd.wasm.config.v1+json"
	// MediaTypeWasmLayer is its layer: the module itself.
	MediaTypeWasmLayer = "application/vnd.wasm.content.layer.v1+wasm"
)

// WasmLayerTypes are the media types of a layer that is a raw module:
// MediaTypeWasmLayer, its predecessor used by Istio's wasme and Solo's
// tooling, and application/wasm (RFC-registered, used by some ORAS pushes).
var WasmLayerTypes = []string{
	MediaTypeWasmLayer,
	"application/vnd.module.wasm.content.layer.v1+wasm",
	"application/wasm",
}

// ImageLayerTypes are the media types of an image layer (a tar, plain or
// gzip-compressed) in which plugin.wasm is looked for, as hyper-mcp does.
var ImageLayerTypes = []string{
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
}

// Defaults of Options.
const (
	DefaultMaxManifest = 4 << 20          // 4 MiB: an OCI manifest is a few KiB
	DefaultMaxLayer    = 256 << 20        // 256 MiB: above any real plugin (ours are 2-10 MiB)
	DefaultTimeout     = 30 * time.Second // per request; a layer's read gets it per 4 MiB, see Options.Timeout
)

// Errors. Each error of Pull, Push and the Transport wraps at most one of
// these (besides ociref.ErrRef).
var (
	// ErrPull: the registry could not be reached or refused the request
	// (network error, timeout, HTTP 4xx/5xx such as an unknown tag or
	// missing credentials), and no cached resolution of the reference
	// exists. Start the registry, fix the reference or credentials, or run
	// toolhost pull once while it is reachable.
	ErrPull = errors.New("OCI registry pull failed")
	// ErrMediaType: the manifest is not an image manifest, or has no layer
	// holding a module (no wasm layer type, no image layer with
	// plugin.wasm), or more than one wasm layer.
	ErrMediaType = errors.New("OCI artifact is not a wasm plugin")
	// ErrTooLarge: the manifest exceeds Options.MaxManifest, or the layer
	// (its descriptor's size, or what a tar layer unpacks to) exceeds
	// Options.MaxLayer. Nothing beyond the limit is read.
	ErrTooLarge = errors.New("OCI artifact too large")
	// ErrDigest: what the registry sent does not match its descriptor: the
	// layer's SHA-256 or size differs, or a manifest pulled by digest has
	// another digest. A cached module that no longer matches its name is
	// reported the same way.
	ErrDigest = errors.New("OCI content does not match its digest")
	// ErrPinned: the module's SHA-256 differs from the plugin's sha256
	// pin. The module is not cached and not run: update the pin if the new
	// module is trusted.
	ErrPinned = errors.New("OCI plugin does not match its sha256 pin")
	// ErrCache: the cache directory could not be written or read.
	ErrCache = errors.New("OCI plugin cache")
)

// Options configure Pull and Push. The zero value (or nil) means every
// default.
type Options struct {
	// CacheDir is the root of the cache: files go under CacheDir/oci.
	// Default: the sandbox's default compilation cache directory,
	// toolhost/wasm under os.UserCacheDir ([host] cache_dir sets both).
	CacheDir string
	// MaxManifest caps a manifest (and an index), in bytes. 0:
	// DefaultMaxManifest.
	MaxManifest int64
	// MaxLayer caps the layer holding the module, and the module, in
	// bytes. 0: DefaultMaxLayer.
	MaxLayer int64
	// Timeout bounds each request: connecting, the registry's answer, and
	// reading the body at no less than 4 MiB per Timeout. 0:
	// DefaultTimeout. The caller's context bounds the whole operation.
	Timeout time.Duration
	// Keychain finds credentials. Nil: authn.DefaultKeychain (the Docker
	// configuration; anonymous when it has none for the registry).
	Keychain authn.Keychain
	// Logger gets one line per pull. Nil: none.
	Logger hclog.Logger
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		r.CacheDir = filepath.Join(base, "toolhost", "wasm")
	}
	if r.MaxManifest <= 0 {
		r.MaxManifest = DefaultMaxManifest
	}
	if r.MaxLayer <= 0 {
		r.MaxLayer = DefaultMaxLayer
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if r.Keychain == nil {
		r.Keychain = authn.DefaultKeychain
	}
	if r.Logger == nil {
		r.Logger = hclog.NewNullLogger()
	}
	return r
}

// Result is the resolution of a reference.
type Result struct {
	// Ref is the reference as written (with its scheme).
	Ref string `json:"ref"`
	// Manifest is the digest of the image manifest ("sha256:HEX").
	Manifest string `json:"manifest"`
	// Digest is the module's digest ("sha256:HEX"): the wasm layer's
	// digest, or for an image layer the SHA-256 of plugin.wasm in it. A
	// plugin's sha256 pin is compared with it.
	Digest string `json:"digest"`
	// Path is the cached module file.
	Path string `json:"path"`
	// Pulled: the module was downloaded now (else it was in the cache).
	Pulled bool `json:"pulled"`
	// Offline: the registry could not be reached, and the module is the
	// one last resolved for Ref (at ResolvedAt); Reason is why.
	Offline    bool      `json:"offline,omitempty"`
	Reason     error     `json:"-"`
	ResolvedAt time.Time `json:"resolved_at"`
}

// Status is a one-line account of r for toolhost status and check:
// "oci://r/p:1 → sha256:… (cached, registry unreachable)".
func (r *Result) Status() string {
	s := r.Ref + " → " + r.Digest
	switch {
	case r.Offline:
		s += " (cached, registry unreachable)"
	case r.Pulled:
		s += " (pulled)"
	default:
		s += " (cached)"
	}
	return s
}

// Pull resolves ref (see ociref.Parse), downloads its module unless the
// cache holds it, and returns where it is. pin, when not empty, is the
// module's expected SHA-256 (64 hex digits, with or without "sha256:").
//
// A reference by digest whose module is cached is not looked up at all
// (its content cannot change). A reference by tag is resolved at the
// registry each time; when the registry cannot be reached (network error,
// timeout, HTTP 5xx or 429), the resolution last stored for ref is used
// and Result.Offline is set; with none, the error wraps ErrPull.
//
// Errors wrap ociref.ErrRef, ErrPull, ErrMediaType, ErrTooLarge,
// ErrDigest, ErrPinned or ErrCache.
func Pull(ctx context.Context, ref, pin string, opts *Options) (*Result, error) {
	r, err := ociref.Parse(ref)
	if err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	pin = normalizePin(pin)
	c := cache{dir: filepath.Join(o.CacheDir, "oci")}
	if r.Digest != "" {
		if e, ok := c.lookup(r.Raw); ok && e.Manifest == r.Digest {
			if res, err := c.reuse(e, pin); err == nil {
				return res, nil
			}
		}
	}
	cl := newClient(r, &o)
	res, err := cl.pull(ctx, &c, pin)
	if err == nil {
		o.Logger.Debug("oci resolve", "ref", ref, "manifest", res.Manifest, "digest", res.Digest, "pulled", res.Pulled)
		return res, nil
	}
	if !errors.Is(err, errUnreachable) {
		return nil, err
	}
	e, ok := c.lookup(r.Raw)
	if !ok {
		return nil, fmt.Errorf("%w (no cached copy: run toolhost pull %s once the registry is reachable)", err, ref)
	}
	res, cerr := c.reuse(e, pin)
	if cerr != nil {
		return nil, fmt.Errorf("%w; the cached copy cannot be used: %w", err, cerr)
	}
	res.Offline, res.Reason = true, err
	o.Logger.Warn("oci registry unreachable: running the cached module", "ref", ref, "digest", res.Digest, "resolved_at", res.ResolvedAt, "error", err)
	return res, nil
}

// Cached returns the resolution of ref last stored in the cache (by Pull,
// toolhost pull or a start), without any request; false when none is
// stored or its module is missing.
func Cached(ref string, opts *Options) (*Result, bool) {
	o := opts.withDefaults()
	c := cache{dir: filepath.Join(o.CacheDir, "oci")}
	e, ok := c.lookup(ref)
	if !ok {
		return nil, false
	}
	res := c.result(e)
	if _, err := os.Stat(res.Path); err != nil {
		return nil, false
	}
	return res, true
}

package ociplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
)

// Manifest media types (OCI Image Spec v1.1 and Docker's schema 2).
const (
	mtOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mtOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mtDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mtDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// errUnreachable marks an error after which the cached resolution is used:
// the registry did not answer (network error, timeout) or answered 5xx or
// 429.
var errUnreachable = errors.New("registry unreachable")

// errPlainHTTP: a request would have gone over plain HTTP to a registry
// not allowed it (see ociref.SchemeHTTP).
var errPlainHTTP = errors.New("plain HTTP refused: use https, or oci+http:// for a registry on loopback")

// descriptor is an OCI content descriptor (OCI Image Spec v1.1,
// descriptor.md).
type descriptor struct {
	MediaType string    `json:"mediaType"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size"`
	Platform  *platform `json:"platform,omitempty"`
	// Annotations, ArtifactType and the rest are not needed.
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// manifest is an image manifest or an index (only the fields read).
type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        *descriptor  `json:"config,omitempty"`
	Layers        []descriptor `json:"layers,omitempty"`
	Manifests     []descriptor `json:"manifests,omitempty"`
}

// client is one pull or push: a registry connection with its own
// http.Transport, whose idle connections are closed at the end.
type client struct {
	ref  ociref.Ref
	o    *Options
	base *http.Transport
	rt   http.RoundTripper // authenticated, after connect
}

func newClient(r ociref.Ref, o *Options) *client {
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: o.Timeout}).DialContext,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &client{ref: r, o: o, base: base}
}

// guard refuses plain-HTTP requests unless the reference is oci+http://
// and the request goes to a loopback host.
type guard struct {
	plainHTTP bool
	inner     http.RoundTripper
}

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !(g.plainHTTP && req.URL.Scheme == "http" && ociref.Loopback(req.URL.Host)) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%s://%s: %w", req.URL.Scheme, req.URL.Host, errPlainHTTP)
	}
	return g.inner.RoundTrip(req)
}

func (cl *client) registry() (name.Registry, error) {
	var opts []name.Option
	if cl.ref.PlainHTTP {
		opts = append(opts, name.Insecure)
	}
	return name.NewRegistry(cl.ref.Registry, opts...)
}

// connect pings the registry and authenticates for scope (pull or push),
// with the keychain's credentials for the registry.
func (cl *client) connect(ctx context.Context, action string) error {
	reg, err := cl.registry()
	if err != nil {
		return fmt.Errorf("%w: %w", ociref.ErrRef, err)
	}
	auth, err := cl.o.Keychain.Resolve(reg)
	if err != nil {
		return fmt.Errorf("%s: %w: credentials: %w", cl.ref.Raw, ErrPull, err)
	}
	tctx, cancel := context.WithTimeout(ctx, cl.o.Timeout)
	defer cancel()
	scope := reg.Repo(cl.ref.Repository).Scope(action)
	rt, err := transport.NewWithContext(tctx, reg, auth, guard{cl.ref.PlainHTTP, cl.base}, []string{scope})
	if err != nil {
		return cl.classify(ctx, err)
	}
	cl.rt = rt
	return nil
}

func (cl *client) close() { cl.base.CloseIdleConnections() }

func (cl *client) url(kind, ident string) string {
	scheme := "https"
	if cl.ref.PlainHTTP {
		scheme = "http"
	}
	return scheme + "://" + cl.ref.Registry + "/v2/" + cl.ref.Repository + "/" + kind + "/" + ident
}

// classify wraps a request's error: errUnreachable when the cached
// resolution may be used instead, ErrPull otherwise. ctx is the caller's:
// when it is done, the caller gave up (ErrPull); a request's own deadline
// passing is the registry not answering (errUnreachable).
func (cl *client) classify(ctx context.Context, err error) error {
	var te *transport.Error
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w: %w", cl.ref.Raw, ErrPull, err)
	case errors.Is(err, errPlainHTTP):
		return fmt.Errorf("%s: %w: %w", cl.ref.Raw, ociref.ErrRef, err)
	case errors.As(err, &te):
		if te.StatusCode >= 500 || te.StatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("%s: %w: %w: %w", cl.ref.Raw, ErrPull, errUnreachable, err)
		}
		return fmt.Errorf("%s: %w: %w", cl.ref.Raw, ErrPull, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: %w: %w: %w", cl.ref.Raw, ErrPull, errUnreachable, err)
	}
	return fmt.Errorf("%s: %w: %w", cl.ref.Raw, ErrPull, err)
}

// get sends a GET of kind (manifests, blobs) ident with a deadline of
// timeout and returns the response (status 200) and the cancel of its
// deadline, which the caller calls after reading the body.
func (cl *client) get(ctx context.Context, kind, ident string, accept []string, timeout time.Duration) (*http.Response, context.CancelFunc, error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, cl.url(kind, ident), nil)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("%w: %w", ociref.ErrRef, err)
	}
	if len(accept) > 0 {
		req.Header.Set("Accept", strings.Join(accept, ", "))
	}
	resp, err := (&http.Client{Transport: cl.rt}).Do(req)
	if err != nil {
		cancel()
		return nil, nil, cl.classify(ctx, err)
	}
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		resp.Body.Close()
		cancel()
		return nil, nil, cl.classify(ctx, err)
	}
	return resp, cancel, nil
}

// fetchManifest GETs the manifest ident (a tag or a digest), at most
// MaxManifest bytes, and returns it with its digest.
func (cl *client) fetchManifest(ctx context.Context, ident string) ([]byte, string, error) {
	resp, cancel, err := cl.get(ctx, "manifests", ident, []string{mtOCIManifest, mtDockerManifest, mtOCIIndex, mtDockerList}, cl.o.Timeout)
	if err != nil {
		return nil, "", err
	}
	defer cancel()
	defer resp.Body.Close()
	if resp.ContentLength > cl.o.MaxManifest {
		return nil, "", fmt.Errorf("%s: the manifest is %d bytes, over the %d-byte limit: %w", cl.ref.Raw, resp.ContentLength, cl.o.MaxManifest, ErrTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, cl.o.MaxManifest+1))
	if err != nil {
		return nil, "", cl.classify(ctx, err)
	}
	if int64(len(b)) > cl.o.MaxManifest {
		return nil, "", fmt.Errorf("%s: the manifest is over the %d-byte limit: %w", cl.ref.Raw, cl.o.MaxManifest, ErrTooLarge)
	}
	sum := sha256.Sum256(b)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if strings.HasPrefix(ident, "sha256:") && ident != digest {
		return nil, "", fmt.Errorf("%s: manifest %s has digest %s: %w", cl.ref.Raw, ident, digest, ErrDigest)
	}
	return b, digest, nil
}

func parseManifest(ref string, b []byte) (*manifest, error) {
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: the manifest is not JSON: %v: %w", ref, err, ErrMediaType)
	}
	if m.SchemaVersion != 2 {
		return nil, fmt.Errorf("%s: manifest schemaVersion %d: %w (want an OCI or Docker schema 2 image manifest)", ref, m.SchemaVersion, ErrMediaType)
	}
	return &m, nil
}

// pull resolves the reference and returns its cached module, downloading
// it unless cached.
func (cl *client) pull(ctx context.Context, c *cache, pin string) (*Result, error) {
	defer cl.close()
	if err := cl.connect(ctx, transport.PullScope); err != nil {
		return nil, err
	}
	ident := cl.ref.Tag
	if cl.ref.Digest != "" {
		ident = cl.ref.Digest
	}
	b, top, err := cl.fetchManifest(ctx, ident)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(cl.ref.Raw, b)
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) > 0 || m.MediaType == mtOCIIndex || m.MediaType == mtDockerList {
		child, err := pickPlatform(cl.ref.Raw, m.Manifests)
		if err != nil {
			return nil, err
		}
		if b, _, err = cl.fetchManifest(ctx, child.Digest); err != nil {
			return nil, err
		}
		if m, err = parseManifest(cl.ref.Raw, b); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC()
	if e, ok := c.lookup(cl.ref.Raw); ok && e.Manifest == top && c.has(e.Digest) {
		if pin != "" && pin != e.Digest {
			return nil, fmt.Errorf("%s resolves to module %s, the config pins %s: %w", cl.ref.Raw, e.Digest, pin, ErrPinned)
		}
		e.ResolvedAt = now
		if err := c.store(e); err != nil {
			return nil, err
		}
		return c.result(e), nil
	}
	layers, raw, err := pickLayers(cl.ref.Raw, m)
	if err != nil {
		return nil, err
	}
	var digest string
	for _, l := range layers {
		digest, err = cl.fetchModule(ctx, c, l, raw, pin)
		if err == nil || !errors.Is(err, errNoModule) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, errNoModule) {
			return nil, fmt.Errorf("%s: no image layer holds plugin.wasm or another .wasm file: %w", cl.ref.Raw, ErrMediaType)
		}
		return nil, err
	}
	e := entry{Ref: cl.ref.Raw, Manifest: top, Digest: digest, ResolvedAt: now}
	if err := c.store(e); err != nil {
		return nil, err
	}
	res := c.result(e)
	res.Pulled = true
	return res, nil
}

// pickPlatform chooses the manifest of an index: a Wasm platform
// (architecture wasm, or os wasip1/wasip2/wasi), else linux/amd64 (what
// hyper-mcp resolves, its plugins being built as linux images), else the
// only entry.
func pickPlatform(ref string, ms []descriptor) (*descriptor, error) {
	for _, want := range []func(p *platform) bool{
		func(p *platform) bool { return p.Architecture == "wasm" || strings.HasPrefix(p.OS, "wasi") },
		func(p *platform) bool { return p.OS == "linux" && p.Architecture == "amd64" },
	} {
		for i := range ms {
			if ms[i].Platform != nil && want(ms[i].Platform) {
				return &ms[i], nil
			}
		}
	}
	if len(ms) == 1 {
		return &ms[0], nil
	}
	return nil, fmt.Errorf("%s: the index has %d manifests and none for wasm or linux/amd64: %w", ref, len(ms), ErrMediaType)
}

// pickLayers returns the layers to look for the module in: the one wasm
// layer (raw true), or every image layer, last first (the file a later
// layer adds is the one an image holds).
func pickLayers(ref string, m *manifest) ([]descriptor, bool, error) {
	var wasm, image []descriptor
	var seen []string
	for _, l := range m.Layers {
		switch {
		case slices.Contains(WasmLayerTypes, l.MediaType):
			wasm = append(wasm, l)
		case slices.Contains(ImageLayerTypes, l.MediaType):
			image = append([]descriptor{l}, image...)
		default:
			seen = append(seen, strconv.Quote(l.MediaType))
		}
	}
	switch {
	case len(wasm) == 1:
		return wasm, true, nil
	case len(wasm) > 1:
		return nil, false, fmt.Errorf("%s: the manifest has %d wasm layers, want one: %w", ref, len(wasm), ErrMediaType)
	case len(image) > 0:
		return image, false, nil
	}
	if len(seen) == 0 {
		seen = []string{"none"}
	}
	return nil, false, fmt.Errorf("%s: no layer of a wasm media type (%s) or image layer with plugin.wasm; layer media types: %s: %w",
		ref, MediaTypeWasmLayer, strings.Join(seen, ", "), ErrMediaType)
}

// errNoModule: an image layer holds no .wasm file.
var errNoModule = errors.New("no module in layer")

var wasmMagic = []byte("\x00asm")

// fetchModule downloads layer l into the cache, verifying its size and
// digest, takes the module from it (l itself when raw, else plugin.wasm in
// the tar), checks the pin and stores the module as sha256/HEX.wasm. It
// returns the module's digest.
func (cl *client) fetchModule(ctx context.Context, c *cache, l descriptor, raw bool, pin string) (string, error) {
	if !validDigest(l.Digest) {
		return "", fmt.Errorf("%s: layer digest %q is not sha256:HEX: %w", cl.ref.Raw, l.Digest, ErrMediaType)
	}
	if l.Size > cl.o.MaxLayer {
		return "", fmt.Errorf("%s: the layer %s is %d bytes, over the %d-byte limit: %w", cl.ref.Raw, l.Digest, l.Size, cl.o.MaxLayer, ErrTooLarge)
	}
	if l.Size <= 0 {
		return "", fmt.Errorf("%s: the layer %s has size %d: %w", cl.ref.Raw, l.Digest, l.Size, ErrDigest)
	}
	if raw && c.has(l.Digest) {
		if pin != "" && pin != l.Digest {
			return "", fmt.Errorf("%s resolves to module %s, the config pins %s: %w", cl.ref.Raw, l.Digest, pin, ErrPinned)
		}
		return l.Digest, nil
	}
	// A deadline that grows with the layer: Timeout per started 4 MiB.
	timeout := cl.o.Timeout * time.Duration(1+l.Size/(4<<20))
	resp, cancel, err := cl.get(ctx, "blobs", l.Digest, nil, timeout)
	if err != nil {
		return "", err
	}
	defer cancel()
	defer resp.Body.Close()
	dir := filepath.Join(c.dir, "sha256")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %w (set [host] cache_dir to a writable directory)", ErrCache, err)
	}
	blob, err := os.CreateTemp(dir, ".blob-*")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCache, err)
	}
	defer os.Remove(blob.Name())
	defer blob.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(blob, h), io.LimitReader(resp.Body, l.Size+1))
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%w: %w", ErrCache, err)
		}
		return "", cl.classify(ctx, err)
	}
	if n != l.Size {
		return "", fmt.Errorf("%s: the registry sent %s bytes of layer %s, its descriptor says %d: %w", cl.ref.Raw, sizeSent(n, l.Size), l.Digest, l.Size, ErrDigest)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != l.Digest {
		return "", fmt.Errorf("%s: layer %s has digest %s: %w", cl.ref.Raw, l.Digest, got, ErrDigest)
	}
	var digest string
	if raw {
		head := make([]byte, 4)
		if _, err := blob.ReadAt(head, 0); err != nil || !bytes.Equal(head, wasmMagic) {
			return "", fmt.Errorf("%s: layer %s of type %s is not a WebAssembly module: %w", cl.ref.Raw, l.Digest, l.MediaType, ErrMediaType)
		}
		digest = l.Digest
		if err := checkPin(cl.ref.Raw, digest, pin); err != nil {
			return "", err
		}
		if err := blob.Chmod(0o600); err != nil {
			return "", fmt.Errorf("%w: %w", ErrCache, err)
		}
		if err := blob.Sync(); err != nil {
			return "", fmt.Errorf("%w: %w", ErrCache, err)
		}
		if err := os.Rename(blob.Name(), c.modulePath(digest)); err != nil {
			return "", fmt.Errorf("%w: %w", ErrCache, err)
		}
		return digest, nil
	}
	if _, err := blob.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("%w: %w", ErrCache, err)
	}
	return extractModule(cl.ref.Raw, c, blob, l, cl.o.MaxLayer, pin)
}

func sizeSent(n, size int64) string {
	if n > size {
		return "more than " + strconv.FormatInt(size, 10)
	}
	return strconv.FormatInt(n, 10)
}

func checkPin(ref, digest, pin string) error {
	if pin != "" && pin != digest {
		return fmt.Errorf("%s resolves to module %s, the config pins %s: %w", ref, digest, pin, ErrPinned)
	}
	return nil
}

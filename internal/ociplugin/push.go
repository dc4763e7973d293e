package ociplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
)

// Pushed is what Push published.
type Pushed struct {
	// Ref is the reference pushed to; Manifest the manifest's digest (pull
	// REF@Manifest to get exactly this); Digest the module's (the layer's),
	// which a sha256 pin names; Size the module's size in bytes.
	Ref      string `json:"ref"`
	Manifest string `json:"manifest"`
	Digest   string `json:"digest"`
	Size     int64  `json:"size"`
}

// wasmConfig is the config blob of a Wasm artifact (CNCF TAG Runtime, Wasm
// OCI Artifact layout): no "created", so that pushing the same module
// twice gives the same manifest digest.
type wasmConfig struct {
	Architecture string   `json:"architecture"`
	OS           string   `json:"os"`
	LayerDigests []string `json:"layerDigests"`
}

// rawManifest is a manifest for remote.Put.
type rawManifest struct{ b []byte }

func (m rawManifest) RawManifest() ([]byte, error)        { return m.b, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return mtOCIManifest, nil }

// Push publishes the module file as ref (a tag, or a digest that must be
// the manifest's), as an OCI image manifest with a config of
// MediaTypeWasmConfig and one layer of MediaTypeWasmLayer: the module,
// unchanged. The file must be a WebAssembly module (ErrMediaType) of at
// most Options.MaxLayer bytes (ErrTooLarge). Errors of the registry wrap
// ErrPull. The cache is not written.
func Push(ctx context.Context, file, ref string, opts *Options) (*Pushed, error) {
	r, err := ociref.Parse(ref)
	if err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	wasm, err := io.ReadAll(io.LimitReader(f, o.MaxLayer+1))
	if err != nil {
		return nil, err
	}
	if int64(len(wasm)) > o.MaxLayer {
		return nil, fmt.Errorf("%s is over the %d-byte limit: %w", file, o.MaxLayer, ErrTooLarge)
	}
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return nil, fmt.Errorf("%s is not a WebAssembly module (no \\0asm header): %w", file, ErrMediaType)
	}
	sum := sha256.Sum256(wasm)
	layerDigest := "sha256:" + hex.EncodeToString(sum[:])
	cfg, err := json.Marshal(wasmConfig{Architecture: "wasm", OS: "wasip1", LayerDigests: []string{layerDigest}})
	if err != nil {
		return nil, err
	}
	cfgSum := sha256.Sum256(cfg)
	man, err := json.Marshal(manifest{
		SchemaVersion: 2,
		MediaType:     mtOCIManifest,
		Config:        &descriptor{MediaType: MediaTypeWasmConfig, Digest: "sha256:" + hex.EncodeToString(cfgSum[:]), Size: int64(len(cfg))},
		Layers:        []descriptor{{MediaType: MediaTypeWasmLayer, Digest: layerDigest, Size: int64(len(wasm))}},
	})
	if err != nil {
		return nil, err
	}
	manSum := sha256.Sum256(man)
	manDigest := "sha256:" + hex.EncodeToString(manSum[:])
	if r.Digest != "" && r.Digest != manDigest {
		return nil, fmt.Errorf("%s: the manifest of %s has digest %s: %w (push to a tag)", ref, file, manDigest, ErrDigest)
	}

	var nopts []name.Option
	if r.PlainHTTP {
		nopts = append(nopts, name.Insecure)
	}
	gref, err := name.ParseReference(r.Name(), nopts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ociref.ErrRef, err)
	}
	cl := newClient(r, &o)
	defer cl.close()
	ropts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(o.Keychain),
		remote.WithTransport(guard{r.PlainHTTP, cl.base}),
		remote.WithJobs(1),
	}
	for _, l := range []struct {
		b  []byte
		mt types.MediaType
	}{{cfg, MediaTypeWasmConfig}, {wasm, MediaTypeWasmLayer}} {
		if err := remote.WriteLayer(gref.Context(), static.NewLayer(l.b, l.mt), ropts...); err != nil {
			return nil, cl.classify(ctx, err)
		}
	}
	if err := remote.Put(gref, rawManifest{man}, ropts...); err != nil {
		return nil, cl.classify(ctx, err)
	}
	return &Pushed{Ref: ref, Manifest: manDigest, Digest: layerDigest, Size: int64(len(wasm))}, nil
}

// Package ocitest runs an in-process OCI registry (go-containerregistry's
// pkg/registry) on loopback for tests, with a hook to answer requests
// itself (a corrupted blob, a huge manifest, a registry error).
package ocitest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an in-process registry on http://127.0.0.1:PORT.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host string

	srv     *httptest.Server
	mu      sync.Mutex
	hook    func(w http.ResponseWriter, r *http.Request) bool
	once    sync.Once
	stalled atomic.Int32
}

// Stall blocks until the client of r gives up (a registry that accepted
// the connection and never answers); Stalled counts the requests blocked
// now.
func (r *Registry) Stall(req *http.Request) {
	r.stalled.Add(1)
	defer r.stalled.Add(-1)
	<-req.Context().Done()
}

// Stalled is the number of requests in Stall.
func (r *Registry) Stalled() int { return int(r.stalled.Load()) }

// New starts a registry, stopped when the test ends.
func New(tb testing.TB) *Registry {
	tb.Helper()
	reg := &Registry{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	reg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		hook := reg.hook
		reg.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	reg.Host = strings.TrimPrefix(reg.srv.URL, "http://")
	tb.Cleanup(reg.Stop)
	return reg
}

// Ref is the oci+http:// reference of repoTag ("plugins/time:1") here.
func (r *Registry) Ref(repoTag string) string { return "oci+http://" + r.Host + "/" + repoTag }

// Intercept makes hook see every request first; it returns true when it
// answered. nil removes it.
func (r *Registry) Intercept(hook func(w http.ResponseWriter, req *http.Request) bool) {
	r.mu.Lock()
	r.hook = hook
	r.mu.Unlock()
}

// Stop closes the registry: its port refuses connections. Idempotent.
func (r *Registry) Stop() {
	r.once.Do(func() {
		r.srv.CloseClientConnections()
		r.srv.Close()
	})
}

// PutBlob uploads b to repo (monolithic upload) and returns its digest.
func (r *Registry) PutBlob(tb testing.TB, repo string, b []byte) string {
	tb.Helper()
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	r.do(tb, http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+d, "application/octet-stream", b, http.StatusCreated)
	return d
}

// PutManifest stores manifest m (of mediaType) as repo:tag.
func (r *Registry) PutManifest(tb testing.TB, repo, tag, mediaType string, m []byte) {
	tb.Helper()
	r.do(tb, http.MethodPut, "/v2/"+repo+"/manifests/"+tag, mediaType, m, http.StatusCreated)
}

func (r *Registry) do(tb testing.TB, method, path, ct string, body []byte, want int) {
	tb.Helper()
	req, err := http.NewRequest(method, r.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		tb.Fatalf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
}

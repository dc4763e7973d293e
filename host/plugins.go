package host

import (
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/ociplugin"
	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

// engine is the Wasm engine of a Host's plugins. This file (the builder of
// plugin backends, and the mapping of a [plugins.NAME] table to the
// sandbox's Manifest) and native.go (the native sandbox of stdio servers)
// are the only ones of package host that import the sandboxes:
// the host tells faults apart by transport's sentinels, which sandbox's
// errors wrap.
type engine = *sandbox.Engine

// DefaultMaxOutput caps one result of a backend whose max_output is not
// set (a [servers.NAME] table, or BackendOptions.MaxOutput): 4 MiB. It is
// sandbox.DefaultMaxOutput, the cap the sandbox enforces on a plugin's
// results, so that the default is one number for every kind of backend:
// the host enforces it on a server's results, the sandbox on a plugin's.
const DefaultMaxOutput = sandbox.DefaultMaxOutput

// PluginManifest maps the [plugins.NAME] table name of cfg (a validated
// configuration) to the sandbox's Manifest. It is the one place that knows
// both: the Host, toolhost prewarm and any embedder that runs a configured
// plugin itself use it.
//
// Every key the sandbox enforces is copied (path, sha256, allowed_hosts,
// allowed_paths with their modes and mount_quota, memory, config,
// instances, isolation, max_output, max_open_files, max_http_requests,
// max_http_bytes); an unset key stays zero, which the sandbox reads as its
// own default (sandbox.DefaultMemory, ...). Manifest.Timeout is the
// plugin's call timeout: its timeout, else [host] call_timeout, else
// config.DefaultCallTimeout. The slices and map are shared with cfg, not
// copied. The keys the host enforces itself (prefix, tools, deny_tools,
// supervision) are not in the Manifest. Error: ErrUnknownBackend when cfg
// has no [plugins.NAME] table.
func PluginManifest(cfg *config.Config, name string) (*sandbox.Manifest, error) {
	p := cfg.Plugins[name]
	if p == nil {
		return nil, fmt.Errorf("%w: %q is not a [plugins.NAME] table of the configuration", ErrUnknownBackend, name)
	}
	m := &sandbox.Manifest{
		Name:   p.Name,
		Path:   p.Path,
		SHA256: p.SHA256,
		Capabilities: sandbox.Capabilities{
			Hosts:  p.AllowedHosts,
			Memory: int64(p.Memory),
		},
		Config:          p.Config,
		Instances:       p.Instances,
		Isolation:       sandbox.Isolation(p.Isolation),
		MaxOutput:       int64(p.MaxOutput),
		MaxOpenFiles:    p.MaxOpenFiles,
		MaxHTTPRequests: p.MaxHTTPRequests,
		MaxHTTPBytes:    int64(p.MaxHTTPBytes),
		Timeout:         config.DefaultCallTimeout,
	}
	switch {
	case p.Timeout > 0:
		m.Timeout = p.Timeout.Std()
	case cfg.Host.CallTimeout > 0:
		m.Timeout = cfg.Host.CallTimeout.Std()
	}
	for _, mt := range p.Mounts {
		mode := sandbox.MountReadOnly
		if mt.ReadWrite {
			mode = sandbox.MountReadWrite
		}
		m.Mounts = append(m.Mounts, sandbox.Mount{Host: mt.Host, Guest: mt.Guest, Mode: mode, Quota: int64(mt.Quota)})
	}
	return m, nil
}

// buildPlugins creates one sandbox.Engine (one on-disk compilation cache) for
// all plugins and a Transport per plugin. The engine is closed by Close after
// every plugin.
func (h *Host) buildPlugins() error {
	eng := h.engine
	if eng == nil {
		var err error
		eng, err = sandbox.NewEngine(&sandbox.EngineOptions{CacheDir: h.config().Host.CacheDir, Logger: h.logger.Named("sandbox")})
		if err != nil {
			return fmt.Errorf("wasm engine: %w", err)
		}
		h.engine = eng
		h.closers = append(h.closers, eng.Close)
	}
	for _, name := range sortedKeys(h.config().Plugins) {
		p := h.config().Plugins[name]
		m, err := PluginManifest(h.config(), name)
		if err != nil {
			return err
		}
		b := h.newBackend(name, KindPlugin, prefixOf(name, p.Prefix), h.callTimeout(p.Timeout), p.Supervision)
		b.timeoutFrom = h.timeoutFrom(p.Timeout)
		b.allow, b.deny = p.ToolRules, p.DenyToolRules
		// A plugin has no list_changed: its tool list is fixed by its
		// module.
		b.newTr = func(func(transport.ListKind)) transport.Transport {
			return eng.Plugin(m, &sandbox.PluginOptions{Logger: b.logger, LazyInstances: h.opts.LazyPluginInstances})
		}
		if ociref.Is(p.Path) {
			// An OCI reference: every start pulls it (a moved tag is
			// picked up; an unreachable registry runs the cached module)
			// and runs the cached module, pinned to its digest.
			ref, pin := p.Path, p.SHA256
			opts := &ociplugin.Options{CacheDir: h.config().Host.CacheDir, Logger: b.logger.Named("oci")}
			b.newTr = func(func(transport.ListKind)) transport.Transport {
				return &ociplugin.Transport{Ref: ref, Pin: pin, Options: opts,
					Build: func(path, digest string) transport.Transport {
						mm := *m
						mm.Path, mm.SHA256 = path, strings.TrimPrefix(digest, "sha256:")
						return eng.Plugin(&mm, &sandbox.PluginOptions{Logger: b.logger, LazyInstances: h.opts.LazyPluginInstances})
					},
					Resolved: func(r *ociplugin.Result) {
						b.mu.Lock()
						b.source = r.Status()
						b.mu.Unlock()
					},
				}
			}
		}
		h.add(b)
	}
	return nil
}

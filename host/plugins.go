package host

import (
	"fmt"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

// engine is the Wasm engine of a Host's plugins. This file (the builder of
// plugin backends) is the only one of package host that imports sandbox:
// the host tells faults apart by transport's sentinels, which sandbox's
// errors wrap.
type engine = *sandbox.Engine

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
		b := h.newBackend(name, KindPlugin, prefixOf(name, p.Prefix), h.callTimeout(p.Timeout), p.Supervision)
		b.timeoutFrom = h.timeoutFrom(p.Timeout)
		b.allow, b.deny = p.ToolRules, p.DenyToolRules
		// A plugin has no list_changed: its tool list is fixed by its
		// module.
		b.newTr = func(func(transport.ListKind)) transport.Transport {
			return eng.Plugin(p, &sandbox.PluginOptions{DefaultTimeout: b.timeout, Logger: b.logger, LazyInstances: h.opts.LazyPluginInstances})
		}
		h.add(b)
	}
	return nil
}

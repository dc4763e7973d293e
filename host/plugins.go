package host

import (
	"fmt"
	"time"

	"github.com/toolhost/toolhost/sandbox"
)

// buildPlugins creates one sandbox.Engine (one on-disk compilation cache) for
// all plugins and a Transport per plugin. The engine is closed by Close after
// every plugin.
func (h *Host) buildPlugins() error {
	eng, err := sandbox.NewEngine(&sandbox.EngineOptions{CacheDir: h.cfg.Host.CacheDir, Logger: h.logger.Named("sandbox")})
	if err != nil {
		return fmt.Errorf("wasm engine: %w", err)
	}
	h.closers = append(h.closers, eng.Close)
	for _, name := range sortedKeys(h.cfg.Plugins) {
		p := h.cfg.Plugins[name]
		b := &backend{name: name, kind: KindPlugin, prefix: prefixOf(name, p.Prefix), timeout: h.callTimeout(p.Timeout),
			logger: h.logger.Named(name), state: StateStarting, since: time.Now(),
			allow: p.ToolRules, deny: p.DenyToolRules}
		b.tr = eng.Plugin(p, &sandbox.PluginOptions{DefaultTimeout: b.timeout, Logger: b.logger})
		h.add(b)
	}
	return nil
}

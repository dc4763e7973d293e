package config

import (
	"github.com/BurntSushi/toml"
)

// Tool-definition pinning modes ([host] pin, and a backend's pin).
const (
	// PinOff: no pins are kept and nothing is quarantined (the default).
	PinOff = "off"
	// PinTrustFirst: a tool's definition is pinned (approved) the first
	// time it is seen; a later change is quarantined until approved.
	PinTrustFirst = "trust-first"
	// PinApprove: a tool is quarantined until an operator approves its
	// definition (toolhost approve), and again whenever it changes.
	PinApprove = "approve"
)

// PinOf returns the pinning mode of backend name's tools: its own pin key,
// else [host] pin, else PinOff.
func (c *Config) PinOf(name string) string {
	if s := c.Servers[name]; s != nil && s.Pin != "" {
		return s.Pin
	}
	if p := c.Plugins[name]; p != nil && p.Pin != "" {
		return p.Pin
	}
	if c.Host.Pin != "" {
		return c.Host.Pin
	}
	return PinOff
}

// PinsOn reports whether any backend's tools are pinned.
func (c *Config) PinsOn() bool {
	if c.Host.Pin != "" && c.Host.Pin != PinOff {
		return true
	}
	for _, n := range c.ServerNames() {
		if p := c.Servers[n].Pin; p != "" && p != PinOff {
			return true
		}
	}
	for _, n := range c.PluginNames() {
		if p := c.Plugins[n].Pin; p != "" && p != PinOff {
			return true
		}
	}
	return false
}

// validatePins checks [host] pin and every backend's pin.
func (l *loader) validatePins(cfg *Config) {
	check := func(key toml.Key, v string) {
		switch v {
		case "", PinOff, PinTrustFirst, PinApprove:
		default:
			l.errorf(key, "must be %q, %q or %q; got %q", PinOff, PinTrustFirst, PinApprove, v)
		}
	}
	check(toml.Key{"host", "pin"}, cfg.Host.Pin)
	for _, n := range cfg.ServerNames() {
		check(toml.Key{"servers", n, "pin"}, cfg.Servers[n].Pin)
	}
	for _, n := range cfg.PluginNames() {
		check(toml.Key{"plugins", n, "pin"}, cfg.Plugins[n].Pin)
	}
}

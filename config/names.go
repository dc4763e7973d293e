package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The tool-name prefix rule, written once: a backend's tools appear in the
// catalogue as prefix + tool name. The default prefix of a backend NAME is
// "NAME__"; its prefix key replaces it, "" for none.

// MaxToolName is the longest catalogue tool name, in bytes: ToolName
// shortens a longer one.
const MaxToolName = 64

// toolNameChars replaces every character of s outside [A-Za-z0-9_-] with
// "_" (one "_" per character; an invalid UTF-8 byte is one character).
func toolNameChars(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if !toolNameByte(s[i]) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0x80 && toolNameByte(byte(r)) {
			b.WriteByte(byte(r))
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func toolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ToolPrefix returns the prefix of the catalogue names of backend's tools:
// *prefix when the backend's table sets one (the prefix key of
// [servers.NAME] or [plugins.NAME]; "" means no prefix), else backend +
// "__".
func ToolPrefix(backend string, prefix *string) string {
	if prefix == nil {
		return backend + "__"
	}
	return *prefix
}

// ToolName returns the catalogue name of the tool a backend lists as tool,
// prefix being its ToolPrefix: prefix + tool, with every character outside
// [A-Za-z0-9_-] replaced by "_" (the characters MCP 2025-11-25,
// server/tools, "Tool names", advises), and a result longer than
// MaxToolName bytes shortened to 55 bytes + "_" + the first 8 hex digits of
// the SHA-256 of prefix + tool, so that it stays unique and stable.
func ToolName(prefix, tool string) string {
	full := toolNameChars(prefix + tool)
	if len(full) > MaxToolName {
		sum := sha256.Sum256([]byte(prefix + tool))
		full = full[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return full
}

// MayOwnToolName reports whether the catalogue name name may be the name
// of a tool of a backend whose ToolPrefix is prefix, before that backend has
// listed its tools: name begins with the prefix as ToolName writes it and is
// longer. Every name may belong to a backend with prefix "" (except "").
func MayOwnToolName(prefix, name string) bool {
	p := toolNameChars(prefix)
	return strings.HasPrefix(name, p) && len(name) > len(p)
}

// BackendPrefix returns the prefix key of the backend named name: of
// [servers.NAME] if there is one, else of [plugins.NAME]; nil when it sets
// none or there is no such backend. ToolPrefix(name, c.BackendPrefix(name))
// is its tools' prefix.
func (c *Config) BackendPrefix(name string) *string {
	if s := c.Servers[name]; s != nil {
		return s.Prefix
	}
	if p := c.Plugins[name]; p != nil {
		return p.Prefix
	}
	return nil
}

package host

import (
	"slices"

	"github.com/toolhost/toolhost/internal/jsonx"
)

// The JSON codec's constants, for the tests of decodeJSON and appendString
// (jsonx's, since the codec moved there).
const (
	maxJSONDepth = jsonx.MaxDepth
	hexDigits    = "0123456789abcdef"
)

// DisableValidation turns off argument and output validation, for the
// benchmarks that measure what it costs.
func DisableValidation(h *Host) { h.noValidate = true }

// ToolBreakers returns the catalogue names of backend's per-tool circuit
// breakers (created by a tool's first call).
func ToolBreakers(h *Host, backend string) []string {
	b := h.named(backend)
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for n := range b.toolBr {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

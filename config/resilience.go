package config

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/BurntSushi/toml"
)

// Per-tool resilience ([tools.NAME] timeout, max_retries, backoff,
// fallback; issue 25 item 7): how long one call of the tool may take, how
// often and how soon it is sent again, and which tools stand in for it.

// Resilience defaults.
const (
	// DefaultMaxRetries caps the retries of one call (key max_retries):
	// before it existed retries were bounded only by the call's deadline.
	DefaultMaxRetries = 3
	// MaxMaxRetries is the largest max_retries accepted.
	MaxMaxRetries = 20
	// DefaultRetryInitial and DefaultRetryMax are the backoff between
	// retries: DefaultRetryInitial before the first retry, doubling
	// (±50% jitter) up to DefaultRetryMax.
	DefaultRetryInitial = 20 * time.Millisecond
	DefaultRetryMax     = time.Second
)

// Fallbacks is a [tools.NAME] fallback: catalogue tools tried in order,
// with the same arguments, when the tool's call fails (see
// ToolOptions.Fallback). TOML: a string ("b__y", one fallback) or an array
// of strings (["a__x", "b__y"]).
type Fallbacks []string

// RetryBackoff is a [tools.NAME] backoff: the wait before the first retry
// (Initial), doubled with ±50% jitter before each next one, up to Max.
// TOML: a duration string (backoff = "100ms": Initial, Max the default 1s or
// Initial if larger) or a table (backoff = { initial = "100ms", max = "2s" }).
// Zero fields mean the defaults (DefaultRetryInitial, DefaultRetryMax).
type RetryBackoff struct {
	Initial Duration `toml:"initial"`
	Max     Duration `toml:"max"`
}

// RetryLimit returns the tool's max_retries (DefaultMaxRetries when unset).
func (t *ToolOptions) RetryLimit() int {
	if t == nil || t.MaxRetries == nil {
		return DefaultMaxRetries
	}
	return *t.MaxRetries
}

// RetryWait returns the tool's backoff: the first wait and the largest
// (defaults DefaultRetryInitial and DefaultRetryMax).
func (t *ToolOptions) RetryWait() (initial, most time.Duration) {
	initial, most = DefaultRetryInitial, DefaultRetryMax
	if t == nil {
		return initial, most
	}
	if t.Backoff.Initial > 0 {
		initial = t.Backoff.Initial.Std()
	}
	if t.Backoff.Max > 0 {
		most = t.Backoff.Max.Std()
	}
	return initial, max(initial, most)
}

// resilienceField decodes a Fallbacks or RetryBackoff value (field calls it).
func (l *loader) resilienceField(prim toml.Primitive, raw any, key toml.Key, fv reflect.Value) {
	switch p := fv.Addr().Interface().(type) {
	case *Fallbacks:
		switch r := raw.(type) {
		case string:
			if s, ok := l.expand(r, key); ok {
				*p = Fallbacks{s}
			}
		case []any:
			var list []string
			l.field(prim, key, reflect.ValueOf(&list).Elem())
			*p = list
		default:
			l.errorf(key, `must be a catalogue tool name or an array of them, like ["a__x", "b__y"]; got %s`, typeName(raw))
		}
	case *RetryBackoff:
		switch raw.(type) {
		case string:
			l.field(prim, key, reflect.ValueOf(&p.Initial).Elem())
		case map[string]any:
			l.table(prim, key, fv)
		default:
			l.errorf(key, `must be a duration, like "100ms", or a table, like { initial = "100ms", max = "2s" }; got %s`, typeName(raw))
		}
	}
}

// validateResilience checks the resilience keys of t ([tools.NAME], at key).
func (l *loader) validateResilience(name string, t *ToolOptions, key toml.Key) {
	k := func(n ...string) toml.Key { return append(key[:len(key):len(key)], n...) }
	l.timeout(k("timeout"), t.Timeout)
	if t.MaxRetries != nil && (*t.MaxRetries < 0 || *t.MaxRetries > MaxMaxRetries) {
		l.errorf(k("max_retries"), "%d is out of range: use 0 (never retry) to %d, or remove the key for the default (%d)", *t.MaxRetries, MaxMaxRetries, DefaultMaxRetries)
	}
	l.timeout(k("backoff", "initial"), t.Backoff.Initial)
	l.timeout(k("backoff", "max"), t.Backoff.Max)
	if t.Backoff.Initial > 0 && t.Backoff.Max > 0 && t.Backoff.Max < t.Backoff.Initial {
		l.errorf(k("backoff"), "max (%s) is less than initial (%s)", t.Backoff.Max, t.Backoff.Initial)
	}
	if t.Fallback != nil && len(t.Fallback) == 0 {
		l.errorf(k("fallback"), "is an empty list: name at least one catalogue tool, or remove the key")
	}
	for i, fb := range t.Fallback {
		switch {
		case fb == name:
			l.errorf(k("fallback"), "a tool cannot be its own fallback")
		case !toolNameRE.MatchString(fb):
			l.errorf(k("fallback"), "%q is not a catalogue tool name (like \"fs__read_file\")", fb)
		case slices.Contains(t.Fallback[:i], fb):
			l.errorf(k("fallback"), "%q is listed twice", fb)
		}
	}
}

// String returns the list as it would be written in TOML.
func (f Fallbacks) String() string {
	if len(f) == 1 {
		return fmt.Sprintf("%q", f[0])
	}
	return fmt.Sprintf("%q", []string(f))
}

package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Options tune Parse and Load. The zero value (or a nil *Options) means the
// documented defaults.
type Options struct {
	// Name is the file name used in error messages (Error.File) when parsing
	// bytes; Parse also stores it, made absolute against Dir, in Config.Path.
	// Load defaults it to the path it was given.
	Name string

	// Dir is the directory relative paths in the file (cwd, path, cache_dir,
	// allowed_paths) are resolved against, made absolute. Parse defaults it
	// to the working directory; Load ignores it and uses the file's
	// directory.
	Dir string

	// LookupEnv resolves ${VAR} references (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// Load reads, decodes, expands and validates the configuration file at path.
// Config.Path is set to the file's absolute path and Config.Dir to its
// directory, which relative paths in the file are resolved against.
//
// A file that cannot be read is reported as the underlying *fs.PathError
// (wrapped: errors.Is(err, fs.ErrNotExist) works). Any problem in the file's
// content is reported as an ErrorList holding every problem found, each
// naming the file, line and key.
func Load(path string, opts *Options) (*Config, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if o.Name == "" {
		o.Name = path
	}
	o.Dir = filepath.Dir(abs)
	return parse(data, o, abs)
}

// Parse decodes, expands and validates a configuration held in memory, as
// Load does for a file. Relative paths are resolved against opts.Dir (default
// the working directory), which is stored in Config.Dir.
//
// Every problem in data is reported in the returned ErrorList, sorted by
// line; the *Config is nil whenever the error is not.
func Parse(data []byte, opts *Options) (*Config, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("config: no Options.Dir and no working directory: %w", err)
		}
		o.Dir = wd
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	o.Dir = dir
	var path string
	if o.Name != "" {
		path = resolvePath(dir, o.Name)
	}
	return parse(data, o, path)
}

// ServerNames returns the names of the servers, sorted.
func (c *Config) ServerNames() []string { return slices.Sorted(maps.Keys(c.Servers)) }

// PluginNames returns the names of the plugins, sorted.
func (c *Config) PluginNames() []string { return slices.Sorted(maps.Keys(c.Plugins)) }

// Backends returns the names of all servers and plugins, sorted. Names are
// unique across both kinds.
func (c *Config) Backends() []string {
	return slices.Sorted(func(yield func(string) bool) {
		for n := range c.Servers {
			if !yield(n) {
				return
			}
		}
		for n := range c.Plugins {
			if !yield(n) {
				return
			}
		}
	})
}

// loader holds the state of one Parse.
type loader struct {
	file   string
	dir    string
	md     toml.MetaData
	loc    *locator
	lookup func(string) (string, bool)
	errs   ErrorList
	// bad holds the keys whose decoding failed: nothing below them is
	// reported again, and validation skips them.
	bad        map[string]bool
	validating bool // errors no longer mark keys bad
	// typos holds the tables that have an unknown key.
	typos map[string]bool
	// defaultSandbox is [host] sandbox once validated: the default of the
	// servers' sandbox keys.
	defaultSandbox string
}

func parse(data []byte, o Options, path string) (*Config, error) {
	l := &loader{file: o.Name, dir: o.Dir, lookup: o.LookupEnv, bad: map[string]bool{}, typos: map[string]bool{}}
	if l.lookup == nil {
		l.lookup = os.LookupEnv
	}
	var top map[string]toml.Primitive
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&top)
	if err != nil {
		return nil, l.syntaxError(err)
	}
	l.md = md
	l.loc = locate(string(data))

	cfg := &Config{Servers: map[string]*Server{}, Plugins: map[string]*Plugin{}, Profiles: map[string]*Profile{}, Tools: map[string]*ToolOptions{}, Path: path, Dir: o.Dir, file: l.file, loc: l.loc}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		key := toml.Key{k}
		switch k {
		case "host":
			l.table(top[k], key, reflect.ValueOf(&cfg.Host).Elem())
		case "servers":
			named(l, top[k], key, cfg.Servers, func(name string, line int) *Server { return &Server{Name: name, Line: line} })
		case "plugins":
			named(l, top[k], key, cfg.Plugins, func(name string, line int) *Plugin { return &Plugin{Name: name, Line: line} })
		case "policy":
			l.table(top[k], key, reflect.ValueOf(&cfg.Policy).Elem())
		case "tools":
			named(l, top[k], key, cfg.Tools, func(name string, line int) *ToolOptions { return &ToolOptions{Name: name, Line: line} })
		case "profiles":
			named(l, top[k], key, cfg.Profiles, func(name string, line int) *Profile { return &Profile{Name: name, Line: line} })
		case "serve":
			l.table(top[k], key, reflect.ValueOf(&cfg.Serve).Elem())
		case "store":
			l.table(top[k], key, reflect.ValueOf(&cfg.Store).Elem())
		case "code_mode": // code mode (config/codemode.go)
			l.table(top[k], key, reflect.ValueOf(&cfg.CodeMode).Elem())
		default:
			l.unknownKey(key, []string{"host", "plugins", "policy", "profiles", "serve", "servers", "store", "tools", "code_mode"})
		}
	}
	// Safety net: the walk above reports unknown keys itself (it decodes key
	// by key, to report every type error rather than the first), but a key
	// it never reached is still unknown.
	for _, k := range md.Undecoded() {
		if !l.reported(k) {
			l.errorf(k, "unknown key: remove it")
		}
	}
	l.validate(cfg)

	if len(l.errs) > 0 {
		l.errs.sort()
		return nil, l.errs
	}
	cfg.validated = true
	return cfg, nil
}

// Validate checks a Config built (or changed) in Go as Load checks a file,
// and fills in the documented default of every field left zero: a zero
// field always means its default (call_timeout 30s, health_interval 30s,
// max_restarts 5, isolation "pooled", ...). It also does what Load does
// after decoding: names each Server and Plugin after its map key when its
// Name is empty, resolves relative paths against c.Dir (default: the
// working directory), parses AllowedPaths into Mounts and compiles every
// glob and regular expression.
//
// Problems are returned as an ErrorList whose entries name the key (like
// "plugins.echo.instances") with Line 0. Validate may be called more than
// once; host.New calls it for a Config that neither Load, Parse nor
// Validate produced. It writes to c, so do not call it while another
// goroutine uses c.
func (c *Config) Validate() error {
	if c.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("config: no Config.Dir and no working directory: %w", err)
		}
		c.Dir = wd
	}
	l := &loader{file: c.Path, dir: c.Dir, bad: map[string]bool{}, typos: map[string]bool{}}
	for name, s := range c.Servers {
		if s == nil {
			l.errorf(toml.Key{"servers", name}, "is nil: use a *config.Server")
			delete(c.Servers, name)
		} else if s.Name == "" {
			s.Name = name
		}
	}
	for name, p := range c.Plugins {
		if p == nil {
			l.errorf(toml.Key{"plugins", name}, "is nil: use a *config.Plugin")
			delete(c.Plugins, name)
		} else if p.Name == "" {
			p.Name = name
		}
	}
	for name, p := range c.Profiles {
		if p == nil {
			c.Profiles[name] = &Profile{Name: name}
		} else if p.Name == "" {
			p.Name = name
		}
	}
	for name, cl := range c.Serve.Clients {
		if cl == nil {
			l.errorf(toml.Key{"serve", "clients", name}, "is nil: use a *config.Client")
			delete(c.Serve.Clients, name)
		}
	}
	for name, t := range c.Tools {
		if t == nil {
			c.Tools[name] = &ToolOptions{Name: name}
		} else if t.Name == "" {
			t.Name = name
		}
	}
	l.validate(c)
	if len(l.errs) > 0 {
		l.errs.sort()
		return l.errs
	}
	c.validated = true
	return nil
}

// Validated reports whether c came from Load or Parse, or passed Validate
// since.
func (c *Config) Validated() bool { return c.validated }

// syntaxError converts an error of the TOML decoder.
func (l *loader) syntaxError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if msg == "" {
			msg = err.Error()
		}
		// LastKey is the key (or table) the parser was in, if any.
		return ErrorList{{File: l.file, Line: pe.Position.Line, Key: pe.LastKey, Msg: "invalid TOML: " + msg}}
	}
	return ErrorList{{File: l.file, Msg: "invalid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}}
}

// errorf records a problem at key.
func (l *loader) errorf(key toml.Key, format string, args ...any) {
	line := 0
	if l.loc != nil {
		line = l.loc.line(key)
	}
	l.errs = append(l.errs, &Error{File: l.file, Line: line, Key: key.String(), Msg: fmt.Sprintf(format, args...)})
	if !l.validating {
		l.bad[key.String()] = true
	}
}

// reported reports whether key or a key above it failed to decode.
func (l *loader) reported(key toml.Key) bool {
	for n := len(key); n > 0; n-- {
		if l.bad[key[:n].String()] {
			return true
		}
	}
	return false
}

// isSet reports whether key is in the file and decoded without a problem.
// For a Config built in Go (no file) it is false: there, a zero field means
// its default, and the checks look at values.
func (l *loader) isSet(key toml.Key) bool {
	return l.loc != nil && l.md.IsDefined(key...) && !l.reported(key)
}

// raw returns the plain Go value of prim: string, int64, float64, bool,
// time.Time, a date or time type, []any, []map[string]any or map[string]any.
func (l *loader) raw(prim toml.Primitive) any {
	var v any
	if err := l.md.PrimitiveDecode(prim, &v); err != nil {
		return nil
	}
	return v
}

// tableOf decodes prim as a table of primitives, marking its keys decoded.
func (l *loader) tableOf(prim toml.Primitive, key toml.Key, want string) (map[string]toml.Primitive, bool) {
	raw := l.raw(prim)
	if _, ok := raw.(map[string]any); !ok {
		l.errorf(key, "must be %s; got %s", want, typeName(raw))
		return nil, false
	}
	var m map[string]toml.Primitive
	if err := l.md.PrimitiveDecode(prim, &m); err != nil {
		l.errorf(key, "must be %s: %s", want, strings.TrimPrefix(err.Error(), "toml: "))
		return nil, false
	}
	return m, true
}

// named decodes a table of [KEY.NAME] tables (key is KIND, or a longer key
// such as serve.clients) into out: one *T per NAME, made by mk with the NAME
// and its header's line.
func named[T any](l *loader, prim toml.Primitive, key toml.Key, out map[string]*T, mk func(name string, line int) *T) {
	m, _ := l.tableOf(prim, key, "a table of ["+key.String()+".NAME] tables")
	for name, sub := range m {
		k := append(key[:len(key):len(key)], name)
		v := mk(name, l.loc.line(k))
		l.table(sub, k, reflect.ValueOf(v).Elem())
		out[name] = v
	}
}

// table decodes prim into the struct v, key by key, by toml tag.
func (l *loader) table(prim toml.Primitive, key toml.Key, v reflect.Value) {
	m, ok := l.tableOf(prim, key, fmt.Sprintf("a table, like [%s] with keys on the lines below", key))
	if !ok {
		return
	}
	fields := tomlFields(v.Type())
	for _, k := range slices.Sorted(maps.Keys(m)) {
		sub := append(key[:len(key):len(key)], k)
		i, ok := fields[k]
		if !ok {
			l.unknownKey(sub, slices.Sorted(maps.Keys(fields)))
			continue
		}
		l.field(m[k], sub, v.FieldByIndex(i))
	}
}

// tomlFields maps toml tags of t's fields to their index, including the
// fields of embedded structs without a tag (Supervision in Server).
func tomlFields(t reflect.Type) map[string][]int {
	m := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			for sub, idx := range tomlFields(f.Type) {
				m[sub] = append([]int{i}, idx...)
			}
			continue
		}
		if tag != "" && tag != "-" {
			m[tag] = []int{i}
		}
	}
	return m
}

// field decodes one value into the struct field fv.
func (l *loader) field(prim toml.Primitive, key toml.Key, fv reflect.Value) {
	raw := l.raw(prim)
	switch p := fv.Addr().Interface().(type) {
	case *string:
		if s, ok := l.str(raw, key); ok {
			*p = s
		}
	case **string:
		if s, ok := l.str(raw, key); ok {
			*p = &s
		}
	case *[]string:
		arr, ok := raw.([]any)
		if !ok {
			l.errorf(key, `must be an array of strings, like ["a", "b"]; got %s`, typeName(raw))
			return
		}
		out := make([]string, 0, len(arr))
		for i, e := range arr {
			s, ok := e.(string)
			if !ok {
				l.errorf(key, "element %d must be a string; got %s", i+1, typeName(e))
				return
			}
			s, ok = l.expand(s, key)
			if !ok {
				return
			}
			out = append(out, s)
		}
		*p = out
	case *map[string]string:
		m, ok := l.tableOf(prim, key, `a table of strings, like { NAME = "value" }`)
		if !ok {
			return
		}
		out := make(map[string]string, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if s, ok := l.str(l.raw(m[k]), append(key[:len(key):len(key)], k)); ok {
				out[k] = s
			}
		}
		*p = out
	case *map[string]Size:
		m, ok := l.tableOf(prim, key, `a table of sizes, like { "/out" = "100MiB" }`)
		if !ok {
			return
		}
		out := make(map[string]Size, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			var v Size
			l.field(m[k], append(key[:len(key):len(key)], k), reflect.ValueOf(&v).Elem())
			out[k] = v
		}
		*p = out
	case *Duration:
		switch r := raw.(type) {
		case string:
			s, ok := l.expand(r, key)
			if !ok {
				return
			}
			if err := p.UnmarshalText([]byte(s)); err != nil {
				l.errorf(key, "%v", err)
			}
		case int64:
			l.errorf(key, `must be a duration string with a unit, like "30s" or "500ms"; got the number %d`, r)
		default:
			l.errorf(key, `must be a duration string, like "30s" or "500ms"; got %s`, typeName(raw))
		}
	case **Duration:
		// An optional duration ([store] audit_retention, issue 25): nil
		// when the key is absent.
		var d Duration
		l.field(prim, key, reflect.ValueOf(&d).Elem())
		*p = &d
	case *Size:
		switch r := raw.(type) {
		case string:
			s, ok := l.expand(r, key)
			if !ok {
				return
			}
			if err := p.UnmarshalText([]byte(s)); err != nil {
				l.errorf(key, "%v", err)
			}
		case int64:
			if r < 0 {
				l.errorf(key, "invalid size %d: must not be negative", r)
				return
			}
			*p = Size(r)
		default:
			l.errorf(key, `must be a size, like "64MiB" or 1048576 (bytes); got %s`, typeName(raw))
		}
	case *int:
		r, ok := raw.(int64)
		if !ok {
			l.errorf(key, "must be an integer; got %s", typeName(raw))
			return
		}
		if r < math.MinInt || r > math.MaxInt {
			l.errorf(key, "%d is out of range", r)
			return
		}
		*p = int(r)
	case **int:
		r, ok := raw.(int64)
		if !ok {
			l.errorf(key, "must be an integer; got %s", typeName(raw))
			return
		}
		if r < math.MinInt32 || r > math.MaxInt32 {
			l.errorf(key, "%d is out of range", r)
			return
		}
		n := int(r)
		*p = &n
	case *map[string]any:
		// A table of arbitrary TOML values, passed on as JSON (health_args);
		// strings are expanded.
		if _, ok := raw.(map[string]any); !ok {
			l.errorf(key, "must be a table, like { name = \"value\" }; got %s", typeName(raw))
			return
		}
		var m map[string]any // decoded again to mark its keys as known
		if err := l.md.PrimitiveDecode(prim, &m); err != nil {
			l.errorf(key, "%s", strings.TrimPrefix(err.Error(), "toml: "))
			return
		}
		out, ok := l.expandAll(m, key).(map[string]any)
		if ok {
			*p = out
		}
	case *Backoff, *Circuit:
		l.table(prim, key, fv)
	case *Fallbacks, *RetryBackoff: // [tools.NAME] fallback and backoff (resilience.go)
		l.resilienceField(prim, raw, key, fv)
	case **OAuth:
		*p = &OAuth{}
		l.table(prim, key, reflect.ValueOf(*p).Elem())
	case *map[string]*Client:
		out := map[string]*Client{}
		named(l, prim, key, out, func(name string, line int) *Client { return &Client{Name: name, Line: line} })
		*p = out
	case *bool:
		r, ok := raw.(bool)
		if !ok {
			l.errorf(key, "must be true or false; got %s", typeName(raw))
			return
		}
		*p = r
	case **bool:
		// An optional bool (enabled): nil when the key is absent.
		r, ok := raw.(bool)
		if !ok {
			l.errorf(key, "must be true or false; got %s", typeName(raw))
			return
		}
		*p = &r
	default:
		// Only reachable if a field of an unsupported type is added to the
		// schema; TestSchemaFieldTypes guards against it.
		l.errorf(key, "internal error: no decoder for %s", fv.Type())
	}
}

// expandAll expands every string inside v (a decoded TOML value).
func (l *loader) expandAll(v any, key toml.Key) any {
	switch x := v.(type) {
	case string:
		s, _ := l.expand(x, key)
		return s
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = l.expandAll(e, key)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = l.expandAll(e, key)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = l.expandAll(e, key)
		}
		return out
	}
	return v
}

// str converts a string value and expands it.
func (l *loader) str(raw any, key toml.Key) (string, bool) {
	s, ok := raw.(string)
	if !ok {
		l.errorf(key, "must be a string; got %s", typeName(raw))
		return "", false
	}
	return l.expand(s, key)
}

// expand expands s, reporting problems at key.
func (l *loader) expand(s string, key toml.Key) (string, bool) {
	v, errs := expand(s, l.lookup)
	for _, e := range errs {
		l.errorf(key, "%s", e.msg)
	}
	return v, len(errs) == 0
}

// unknownKey reports key as unknown, suggesting the closest valid key.
func (l *loader) unknownKey(key toml.Key, valid []string) {
	l.typos[key[:len(key)-1].String()] = true
	last := key[len(key)-1]
	best, bestDist := "", 3
	for _, v := range valid {
		if d := editDistance(strings.ToLower(last), v); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" {
		l.errorf(key, "unknown key: did you mean %q?", best)
		return
	}
	l.errorf(key, "unknown key: the keys allowed here are %s", strings.Join(valid, ", "))
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// typeName names the TOML type of a decoded value, with an article.
func typeName(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the float %v", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case time.Time:
		return "a date-time"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	default:
		return "a date or time"
	}
}

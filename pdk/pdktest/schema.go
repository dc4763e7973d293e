//go:build !wasip1

package pdktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkArguments applies schema (a tool's inputSchema) to args as the host
// does before it calls a plugin, and returns the host's error text, or ""
// when args conform. name is the tool's name.
//
// The pdk has no dependencies, so this is not the host's validator (JSON
// Schema 2020-12, santhosh-tekuri/jsonschema) but a subset of it that gives
// the same text for these keywords: type, properties, required,
// additionalProperties, items, enum, const, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems,
// maxItems and pattern. Any other keyword ($ref, allOf, anyOf, oneOf, not,
// if/then/else, format, prefixItems, uniqueItems, multipleOf, ...) is not
// checked here (the host does check it). Neither fills in "default"s.
func checkArguments(name string, schema, args json.RawMessage) string {
	var s any
	if err := json.Unmarshal(schema, &s); err != nil {
		return ""
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return ""
	}
	var msgs []string
	validate(s, v, nil, &msgs)
	if len(msgs) == 0 {
		return ""
	}
	if len(msgs) > 5 {
		msgs = append(msgs[:5], fmt.Sprintf("(%d more)", len(msgs)-5))
	}
	return fmt.Sprintf("invalid arguments for %s: %s", name, strings.Join(msgs, "; "))
}

func validate(schema, v any, path []string, msgs *[]string) {
	s, ok := schema.(map[string]any)
	if !ok {
		if b, ok := schema.(bool); ok && !b {
			*msgs = append(*msgs, field(path)+": false schema")
		}
		return
	}
	fail := func(format string, args ...any) {
		*msgs = append(*msgs, field(path)+": "+fmt.Sprintf(format, args...))
	}
	got := typeOf(v)
	if t, ok := s["type"]; ok {
		var want []string
		switch t := t.(type) {
		case string:
			want = []string{t}
		case []any:
			for _, x := range t {
				if x, ok := x.(string); ok {
					want = append(want, x)
				}
			}
		}
		matched := false
		for _, w := range want {
			if w == got || w == "integer" && got == "number" && isInteger(v) {
				matched = true
			}
		}
		if len(want) > 0 && !matched {
			fail("got %s, want %s", got, strings.Join(want, " or "))
			return
		}
	}
	if c, ok := s["const"]; ok && !equal(v, c) {
		fail("value must be %s", display(c))
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || equal(v, x)
		}
		if !found {
			var want []string
			for _, x := range e {
				want = append(want, display(x))
			}
			if len(want) == 1 {
				fail("value must be %s", want[0])
			} else {
				fail("value must be one of %s", strings.Join(want, ", "))
			}
		}
	}
	switch v := v.(type) {
	case map[string]any:
		var missing []string
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if r, ok := r.(string); ok {
					if _, ok := v[r]; !ok {
						missing = append(missing, r)
					}
				}
			}
		}
		if len(missing) == 1 {
			fail("missing property %s", quote(missing[0]))
		} else if len(missing) > 1 {
			fail("missing properties %s", joinQuoted(missing))
		}
		props, _ := s["properties"].(map[string]any)
		var extra []string
		for _, k := range sortedKeys(v) {
			if ps, ok := props[k]; ok {
				validate(ps, v[k], append(path, k), msgs)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					extra = append(extra, k)
				}
			case map[string]any:
				validate(ap, v[k], append(path, k), msgs)
			}
		}
		if len(extra) > 0 {
			fail("additional properties %s not allowed", joinQuoted(extra))
		}
	case []any:
		if n, ok := count(s["minItems"]); ok && len(v) < n {
			fail("minItems: got %d, want %d", len(v), n)
		}
		if n, ok := count(s["maxItems"]); ok && len(v) > n {
			fail("maxItems: got %d, want %d", len(v), n)
		}
		if items, ok := s["items"]; ok {
			for i, x := range v {
				validate(items, x, append(path, strconv.Itoa(i)), msgs)
			}
		}
	case string:
		n := utf8.RuneCountInString(v)
		if m, ok := count(s["minLength"]); ok && n < m {
			fail("minLength: got %d, want %d", n, m)
		}
		if m, ok := count(s["maxLength"]); ok && n > m {
			fail("maxLength: got %d, want %d", n, m)
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(v) {
				fail("%s does not match pattern %s", quote(v), quote(p))
			}
		}
	case json.Number:
		x := rat(v)
		for _, b := range []struct {
			kw  string
			bad func(c int) bool
		}{
			{"minimum", func(c int) bool { return c < 0 }},
			{"maximum", func(c int) bool { return c > 0 }},
			{"exclusiveMinimum", func(c int) bool { return c <= 0 }},
			{"exclusiveMaximum", func(c int) bool { return c >= 0 }},
		} {
			if lim, ok := s[b.kw].(float64); ok && x != nil {
				if b.bad(x.Cmp(new(big.Rat).SetFloat64(lim))) {
					g, _ := x.Float64()
					fail("%s: got %v, want %v", b.kw, g, lim)
				}
			}
		}
	}
}

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "invalid"
}

func rat(n json.Number) *big.Rat {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil
	}
	return r
}

func isInteger(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	r := rat(n)
	return r != nil && r.IsInt()
}

// count reads a non-negative integer keyword (decoded as float64).
func count(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// equal compares an argument (numbers as json.Number) with a schema value
// (numbers as float64) as JSON values.
func equal(v, s any) bool {
	switch v := v.(type) {
	case json.Number:
		f, ok := s.(float64)
		r := rat(v)
		return ok && r != nil && r.Cmp(new(big.Rat).SetFloat64(f)) == 0
	case []any:
		a, ok := s.([]any)
		if !ok || len(a) != len(v) {
			return false
		}
		for i := range v {
			if !equal(v[i], a[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		m, ok := s.(map[string]any)
		if !ok || len(m) != len(v) {
			return false
		}
		for k, x := range v {
			y, ok := m[k]
			if !ok || !equal(x, y) {
				return false
			}
		}
		return true
	}
	return v == s
}

// field is the host's name for a place in the arguments: "user.age",
// "tags[2]", "(arguments)" for the object itself.
func field(path []string) string {
	if len(path) == 0 {
		return "(arguments)"
	}
	var b strings.Builder
	for i, p := range path {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func quote(s string) string {
	s = fmt.Sprintf("%q", s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func joinQuoted(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

func display(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case []any, map[string]any:
		return "value"
	}
	return fmt.Sprintf("%v", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

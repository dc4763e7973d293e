package pdk

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A fast path for Bind, for the common case of a tool's arguments: a flat
// JSON object decoded into a pointer to a struct whose fields are strings,
// booleans, integers and floats. encoding/json costs about a hundred
// microseconds per Bind inside a Wasm guest (reflection and an indirect call
// per input byte; see envelope.go); this reads the object once and sets the
// fields through a plan built once per type.
//
// It is a fast path only: on anything it does not handle it gives up
// (ok == false) and Bind uses encoding/json, so what Bind does is always
// exactly what encoding/json does (FuzzBind checks it). It gives up on: a
// target that is not a pointer to a struct, or whose struct has embedded
// fields, a ",string" tag option, a tag name other than letters, digits and
// '_', two fields whose names match case-insensitively, or implements
// json.Unmarshaler; a key that is not plain ASCII, or that matches a field
// only case-insensitively (encoding/json accepts that); a value of another
// type than its field's (encoding/json then reports the error), a field of
// another kind (slices, maps, pointers, interfaces, structs, types with
// their own UnmarshalJSON or UnmarshalText), an object or array value for an
// unknown key, a number out of its field's range or an integer field given
// a fraction or exponent, invalid JSON, and trailing bytes.

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

type bindField struct {
	name   string
	offset uintptr
	bits   int
	kind   reflect.Kind // 0: present in the struct but not handled here
}

type bindPlan struct {
	t      reflect.Type
	ok     bool
	fields []bindField
}

var (
	bindPlans sync.Map                 // reflect.Type (the struct) → *bindPlan
	lastPlan  atomic.Pointer[bindPlan] // the last one used: a tool binds one type
)

func planFor(t reflect.Type) *bindPlan {
	if p := lastPlan.Load(); p != nil && p.t == t {
		return p
	}
	v, ok := bindPlans.Load(t)
	if !ok {
		v, _ = bindPlans.LoadOrStore(t, makePlan(t))
	}
	p := v.(*bindPlan)
	lastPlan.Store(p)
	return p
}

func makePlan(t reflect.Type) *bindPlan {
	p := &bindPlan{t: t}
	if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return p
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return p
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for _, o := range strings.Split(opts, ",") {
			if o == "string" {
				return p
			}
		}
		if name == "" {
			name = f.Name
		}
		for _, c := range []byte(name) {
			if !(c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z') {
				return p
			}
		}
		for _, g := range p.fields {
			if strings.EqualFold(g.name, name) {
				return p
			}
		}
		bf := bindField{name: name, offset: f.Offset}
		ft := f.Type
		if !reflect.PointerTo(ft).Implements(unmarshalerType) && !reflect.PointerTo(ft).Implements(textUnmarshalerType) {
			switch k := ft.Kind(); k {
			case reflect.String, reflect.Bool,
				reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				bf.kind = k
				if k != reflect.String && k != reflect.Bool {
					bf.bits = ft.Bits()
				}
			}
		}
		p.fields = append(p.fields, bf)
	}
	p.ok = true
	return p
}

// maxBindKeys bounds the keys of an object the fast path takes; the first
// stagedKeys are staged on the stack.
const (
	maxBindKeys = 64
	stagedKeys  = 6
)

// bindSet is one field assignment, staged until the whole object is read.
type bindSet struct {
	f   *bindField
	s   string
	n   uint64 // int64, uint64 or float64 bits; bool as 0/1
	nul bool
}

// bindFast decodes the JSON object args into v as encoding/json would, or
// reports ok false having left v unchanged. The assignments are staged and
// made only once the whole object has been read, through the field offsets
// of the plan (the kinds are checked when the plan is made).
func bindFast(args []byte, v any) (ok bool) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	base := reflect.ValueOf(v).UnsafePointer()
	if base == nil {
		return false
	}
	plan := planFor(t.Elem())
	if !plan.ok {
		return false
	}
	var staged [stagedKeys]bindSet
	sets := staged[:0]
	s := argScanner{b: args}
	if !s.next('{') {
		return false
	}
	if !s.next('}') {
		for {
			key, plain, ok := s.str()
			if !ok || !plain || !s.next(':') {
				return false
			}
			f := plan.field(key)
			if f == nil {
				if plan.folds(key) || !s.skipScalar() {
					return false
				}
			} else {
				if f.kind == 0 || len(sets) == maxBindKeys {
					return false
				}
				sets = append(sets, bindSet{f: f})
				if !s.value(&sets[len(sets)-1]) {
					return false
				}
			}
			if s.next(',') {
				continue
			}
			if !s.next('}') {
				return false
			}
			break
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return false
	}
	for i := range sets {
		st := &sets[i]
		if st.nul {
			continue
		}
		p := unsafe.Add(base, st.f.offset)
		switch st.f.kind {
		case reflect.String:
			*(*string)(p) = st.s
		case reflect.Bool:
			*(*bool)(p) = st.n != 0
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			switch st.f.bits { // int and uint: 32 or 64 bits by platform
			case 64:
				*(*uint64)(p) = st.n
			case 32:
				*(*uint32)(p) = uint32(st.n)
			case 16:
				*(*uint16)(p) = uint16(st.n)
			case 8:
				*(*uint8)(p) = uint8(st.n)
			}
		case reflect.Float64:
			*(*float64)(p) = math.Float64frombits(st.n)
		case reflect.Float32:
			*(*float32)(p) = float32(math.Float64frombits(st.n))
		}
	}
	return true
}

func (p *bindPlan) field(key []byte) *bindField {
	for i := range p.fields {
		if p.fields[i].name == string(key) {
			return &p.fields[i]
		}
	}
	return nil
}

// folds reports whether key matches a field name case-insensitively.
func (p *bindPlan) folds(key []byte) bool {
	for i := range p.fields {
		if strings.EqualFold(p.fields[i].name, string(key)) {
			return true
		}
	}
	return false
}

type argScanner struct {
	b []byte
	i int
}

func (s *argScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *argScanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *argScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str scans a string token (with strEnd, 8 bytes at a time). plain:
// printable ASCII without escapes, so raw is the value.
func (s *argScanner) str() (raw []byte, plain, ok bool) {
	if !s.next('"') {
		return nil, false, false
	}
	end, plain := strEnd(s.b, s.i)
	if end < 0 {
		return nil, false, false
	}
	raw = s.b[s.i:end]
	s.i = end + 1
	return raw, plain, true
}

// stringValue scans a string token and decodes it.
func (s *argScanner) stringValue() (string, bool) {
	start := s.i
	raw, plain, ok := s.str()
	if !ok {
		return "", false
	}
	if plain {
		return string(raw), true
	}
	return decodeString(s.b[start:s.i])
}

// decodeString decodes a string token with escapes or non-ASCII bytes with
// encoding/json (invalid UTF-8 becomes U+FFFD there, as in a full decode).
// It is apart from stringValue so that the plain path does not allocate v.
//
//go:noinline
func decodeString(tok []byte) (string, bool) {
	var v string
	if json.Unmarshal(tok, &v) != nil {
		return "", false
	}
	return v, true
}

// number scans a JSON number token and returns its text and whether it is
// an integer (no fraction, no exponent).
func (s *argScanner) number() (text []byte, integer, ok bool) {
	s.ws()
	b, i := s.b, s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	s.i = i
	return b[start:i], integer, true
}

func (s *argScanner) literal(lit string) bool {
	s.ws()
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// skipScalar skips a string, number, true, false or null.
func (s *argScanner) skipScalar() bool {
	switch c := s.peek(); {
	case c == '"':
		_, ok := s.stringValue()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		_, _, ok := s.number()
		return ok
	}
	return s.literal("true") || s.literal("false") || s.literal("null")
}

// value scans one value for st.f into st. null leaves the field as it is,
// as in encoding/json.
func (s *argScanner) value(st *bindSet) bool {
	if s.literal("null") {
		st.nul = true
		return true
	}
	f := st.f
	switch f.kind {
	case reflect.String:
		if s.peek() != '"' {
			return false
		}
		v, ok := s.stringValue()
		st.s = v
		return ok
	case reflect.Bool:
		switch {
		case s.literal("true"):
			st.n = 1
		case s.literal("false"):
			st.n = 0
		default:
			return false
		}
		return true
	}
	text, integer, ok := s.number()
	if !ok {
		return false
	}
	switch f.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := parseInt(text, f.bits)
		if !integer || !ok {
			return false
		}
		st.n = uint64(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if text[0] == '-' {
			return false
		}
		n, ok := parseUint(text, f.bits)
		if !integer || !ok {
			return false
		}
		st.n = n
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(string(text), f.bits)
		if err != nil {
			return false
		}
		st.n = math.Float64bits(x)
	default:
		return false
	}
	return true
}

// parseUint parses the digits of a JSON integer (no sign) that fits in bits.
func parseUint(b []byte, bits int) (uint64, bool) {
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, bits == 64 || n < 1<<bits
}

// parseInt parses a JSON integer that fits in a signed integer of bits.
func parseInt(b []byte, bits int) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseUint(b, 64)
	limit := uint64(1) << (bits - 1)
	if !ok || !neg && u >= limit || neg && u > limit {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

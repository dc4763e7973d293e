// Package wasmfile is a minimal reader and rewriter of the WebAssembly
// binary format (core spec 2.0, section 5 "Binary Format"): enough to list a
// module's imports, its exported functions with their signatures and its
// memory limits, and to rename the module of some of its function imports
// (RewriteImports). sandbox uses it before it compiles a plugin; it is not
// part of toolhost's public API. The module is untrusted input: every length
// is bounds-checked, and nothing panics (FuzzParse).
package wasmfile

import (
	"bytes"
	"errors"
	"fmt"
)

// Value types (core spec 5.3.1).
const (
	ValI32 = 0x7f
	ValI64 = 0x7e
)

// External kinds (core spec 5.5.5).
const (
	KindFunc   = 0x00
	KindTable  = 0x01
	KindMemory = 0x02
	KindGlobal = 0x03
	KindTag    = 0x04
)

// FuncType is a function signature: its parameter and result value types
// (ValI32, ValI64, 0x7d f32, 0x7c f64, ...).
type FuncType struct {
	Params, Results []byte
}

// String writes t as "(i32, i64) -> (i32)".
func (t FuncType) String() string {
	name := func(vs []byte) string {
		var b bytes.Buffer
		for i, v := range vs {
			if i > 0 {
				b.WriteString(", ")
			}
			switch v {
			case ValI32:
				b.WriteString("i32")
			case ValI64:
				b.WriteString("i64")
			case 0x7d:
				b.WriteString("f32")
			case 0x7c:
				b.WriteString("f64")
			default:
				fmt.Fprintf(&b, "0x%02x", v)
			}
		}
		return b.String()
	}
	return "(" + name(t.Params) + ") -> (" + name(t.Results) + ")"
}

// Import is one entry of the import section.
type Import struct {
	Module, Name string
	Kind         byte
	Type         FuncType // for functions
}

// Module is what sandbox needs to know about a module before compiling it.
type Module struct {
	Imports []Import
	// Exports maps exported function names to their signatures.
	Exports map[string]FuncType
	// MemMin and MemMax are the limits of memory 0 in 64 KiB pages, declared
	// or imported; HasMemMax is false when no maximum is declared.
	MemMin, MemMax uint64
	HasMemMax      bool
	HasMemory      bool
	// importSec is the [start, end) of the import section body, for
	// rewriting; 0, 0 when there is no import section.
	importStart, importEnd int
	importHeader           int // offset of the section id byte
}

// ErrMalformed: the bytes are not a WebAssembly module this reader can
// parse (bad magic or version, a length past the end, ...).
var ErrMalformed = errors.New("malformed WebAssembly module")

type reader struct {
	b   []byte
	off int
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, ErrMalformed
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) uleb(maxBits uint) (uint64, error) {
	var v uint64
	var shift uint
	for {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift >= maxBits {
			return 0, ErrMalformed
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
		shift += 7
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(35)
	if err != nil || v > 0xffffffff {
		return 0, ErrMalformed
	}
	return uint32(v), nil
}

func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(r.off)+uint64(n) > uint64(len(r.b)) {
		return nil, ErrMalformed
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(n)
	return string(b), err
}

// limits reads a limits structure (core spec 5.3.4, with the threads and
// memory64 flag bits).
func (r *reader) limits() (min, max uint64, hasMax bool, err error) {
	flag, err := r.byte()
	if err != nil {
		return
	}
	if flag > 0x07 {
		return 0, 0, false, ErrMalformed
	}
	bits := uint(35)
	if flag&0x04 != 0 {
		bits = 70
	}
	if min, err = r.uleb(bits); err != nil {
		return
	}
	if flag&0x01 != 0 {
		hasMax = true
		max, err = r.uleb(bits)
	}
	return
}

// Parse reads the sections sandbox needs. It does not validate the
// module: wazero does that when compiling.
func Parse(b []byte) (*Module, error) {
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		return nil, fmt.Errorf("%w: not a WebAssembly binary (missing \\0asm magic)", ErrMalformed)
	}
	if !bytes.Equal(b[4:8], []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("%w: unsupported binary version %x (want 1; components are not supported)", ErrMalformed, b[4:8])
	}
	m := &Module{Exports: map[string]FuncType{}}
	var types []FuncType
	var funcTypeIdx []uint32 // imported functions first, then defined ones
	type exp struct {
		name string
		idx  uint32
	}
	var exports []exp
	r := &reader{b: b, off: 8}
	for r.off < len(b) {
		hdr := r.off
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		body, err := r.bytes(size)
		if err != nil {
			return nil, fmt.Errorf("%w: section %d overruns the file", ErrMalformed, id)
		}
		s := &reader{b: body}
		switch id {
		case 1: // type
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				form, err := s.byte()
				if err != nil {
					return nil, err
				}
				if form != 0x60 {
					return nil, fmt.Errorf("%w: unsupported type form 0x%02x", ErrMalformed, form)
				}
				var t FuncType
				for _, dst := range []*[]byte{&t.Params, &t.Results} {
					k, err := s.u32()
					if err != nil {
						return nil, err
					}
					v, err := s.bytes(k)
					if err != nil {
						return nil, err
					}
					*dst = v
				}
				types = append(types, t)
			}
		case 2: // import
			m.importHeader, m.importStart, m.importEnd = hdr, r.off-int(size), r.off
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				var im Import
				if im.Module, err = s.name(); err != nil {
					return nil, err
				}
				if im.Name, err = s.name(); err != nil {
					return nil, err
				}
				if im.Kind, err = s.byte(); err != nil {
					return nil, err
				}
				switch im.Kind {
				case KindFunc:
					ti, err := s.u32()
					if err != nil {
						return nil, err
					}
					if int(ti) >= len(types) {
						return nil, fmt.Errorf("%w: import %s.%s has unknown type %d", ErrMalformed, im.Module, im.Name, ti)
					}
					im.Type = types[ti]
					funcTypeIdx = append(funcTypeIdx, ti)
				case KindTable:
					if _, err := s.byte(); err != nil {
						return nil, err
					}
					if _, _, _, err := s.limits(); err != nil {
						return nil, err
					}
				case KindMemory:
					min, max, hasMax, err := s.limits()
					if err != nil {
						return nil, err
					}
					if !m.HasMemory {
						m.HasMemory, m.MemMin, m.MemMax, m.HasMemMax = true, min, max, hasMax
					}
				case KindGlobal:
					if _, err := s.bytes(2); err != nil {
						return nil, err
					}
				case KindTag:
					if _, err := s.bytes(1); err != nil {
						return nil, err
					}
					if _, err := s.u32(); err != nil {
						return nil, err
					}
				default:
					return nil, fmt.Errorf("%w: unknown import kind 0x%02x", ErrMalformed, im.Kind)
				}
				m.Imports = append(m.Imports, im)
			}
		case 3: // function
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				ti, err := s.u32()
				if err != nil {
					return nil, err
				}
				funcTypeIdx = append(funcTypeIdx, ti)
			}
		case 5: // memory
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				min, max, hasMax, err := s.limits()
				if err != nil {
					return nil, err
				}
				if !m.HasMemory {
					m.HasMemory, m.MemMin, m.MemMax, m.HasMemMax = true, min, max, hasMax
				}
			}
		case 7: // export
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				name, err := s.name()
				if err != nil {
					return nil, err
				}
				kind, err := s.byte()
				if err != nil {
					return nil, err
				}
				idx, err := s.u32()
				if err != nil {
					return nil, err
				}
				if kind == KindFunc {
					exports = append(exports, exp{name, idx})
				}
			}
		}
	}
	for _, e := range exports {
		if int(e.idx) >= len(funcTypeIdx) || int(funcTypeIdx[e.idx]) >= len(types) {
			return nil, fmt.Errorf("%w: export %q refers to an unknown function", ErrMalformed, e.name)
		}
		m.Exports[e.name] = types[funcTypeIdx[e.idx]]
	}
	return m, nil
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendName(b []byte, s string) []byte {
	return append(appendULEB(b, uint64(len(s))), s...)
}

// RewriteImports returns a copy of the module b (m is Parse(b)) in which
// every function import from module "from" is imported from module "to"
// instead. Everything
// else is copied byte for byte. This is how sandbox substitutes its own
// implementation of the Extism kernel imports (see sandbox/env.go): the go-sdk
// instantiates its own "extism:host/env" module in every runtime and refuses
// a second module of that name.
func RewriteImports(b []byte, m *Module, from, to string) []byte {
	if m.importEnd == 0 {
		return b
	}
	body := make([]byte, 0, m.importEnd-m.importStart+64)
	body = appendULEB(body, uint64(len(m.Imports)))
	// Re-read the entries to copy their descriptors verbatim.
	r := &reader{b: b[m.importStart:m.importEnd]}
	r.u32()
	for _, im := range m.Imports {
		r.name()
		r.name()
		descStart := r.off
		kind, _ := r.byte()
		switch kind {
		case KindFunc:
			r.u32()
		case KindTable:
			r.byte()
			r.limits()
		case KindMemory:
			r.limits()
		case KindGlobal:
			r.bytes(2)
		case KindTag:
			r.byte()
			r.u32()
		}
		mod := im.Module
		if im.Kind == KindFunc && mod == from {
			mod = to
		}
		body = appendName(body, mod)
		body = appendName(body, im.Name)
		body = append(body, r.b[descStart:r.off]...)
	}
	out := make([]byte, 0, len(b)+len(body)-(m.importEnd-m.importStart)+8)
	out = append(out, b[:m.importHeader]...)
	out = append(out, 2)
	out = appendULEB(out, uint64(len(body)))
	out = append(out, body...)
	out = append(out, b[m.importEnd:]...)
	return out
}

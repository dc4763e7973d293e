package host

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"
)

func decodeArgs(t testing.TB, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testKey is testAuditor's HMAC key.
var testKey = []byte("0123456789abcdef0123456789abcdef")

func testAuditor() *auditor {
	a := &auditor{
		extra: []*regexp.Regexp{regexp.MustCompile(`^pin$`)},
		scrub: strings.NewReplacer("tok-secret", redacted),
	}
	a.macs.New = func() any { return hmac.New(sha256.New, testKey) }
	return a
}

// TestCanonicalArgs checks the canonical form (hashed into ArgsHMAC) and
// the redacted copy (AuditRecord.Args), made in one pass when nothing is
// redacted and in two otherwise.
func TestCanonicalArgs(t *testing.T) {
	a := testAuditor()
	for _, tc := range []struct {
		name, in, canonical, args string
	}{
		{"flat", `{ "text" : "hello", "n": 1.50 }`, `{"n":1.50,"text":"hello"}`, ""},
		{"nested",
			`{"z":{"y":[3,{"b":null,"a":true}],"x":"\u00e9\n"},"a":[]}`,
			`{"a":[],"z":{"x":"é\n","y":[3,{"a":true,"b":null}]}}`, ""},
		{"sensitive at depth",
			`{"q":"x","outer":{"list":[{"apiKey":"k-1","keep":1},{"deep":{"Password":{"v":2}}}]}}`,
			`{"outer":{"list":[{"apiKey":"k-1","keep":1},{"deep":{"Password":{"v":2}}}]},"q":"x"}`,
			`{"outer":{"list":[{"apiKey":"[REDACTED]","keep":1},{"deep":{"Password":"[REDACTED]"}}]},"q":"x"}`},
		{"extra pattern", `{"pin":1234,"spin":1}`, `{"pin":1234,"spin":1}`, `{"pin":"[REDACTED]","spin":1}`},
		{"secret in a string at depth", `{"a":["x",{"b":"carry tok-secret"}]}`,
			`{"a":["x",{"b":"carry tok-secret"}]}`, `{"a":["x",{"b":"carry [REDACTED]"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.args
			if want == "" {
				want = tc.canonical
			}
			canonical, args := canonicalArgs(decodeArgs(t, tc.in), a, len(tc.in))
			if string(canonical) != tc.canonical {
				t.Errorf("canonical\n%s\nwant\n%s", canonical, tc.canonical)
			}
			if string(args) != want {
				t.Errorf("args\n%s\nwant\n%s", args, want)
			}
			mac := hmac.New(sha256.New, testKey)
			mac.Write([]byte(tc.canonical))
			if got := a.hashArgs(canonical); got != hex.EncodeToString(mac.Sum(nil)) {
				t.Errorf("hash %s, want the HMAC-SHA-256 of %s", got, tc.canonical)
			}
			// Without an auditor: the canonical form only.
			if c, args := canonicalArgs(decodeArgs(t, tc.in), nil, 0); string(c) != tc.canonical || string(args) != tc.canonical {
				t.Errorf("without auditor: %s %s", c, args)
			}
		})
	}
}

// FuzzCanonicalArgs checks, for any JSON object, that the canonical form is
// valid JSON with the same value, canonical again unchanged, and that the
// redacted copy is valid JSON, equal to the canonical form when no key is
// sensitive and no string holds a secret.
func FuzzCanonicalArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"b":[1,"x",{"token":2}],"a":{"c":null}}`,
		`{"text":"tok-secret","pin":[true,false]}`, `{"\u00e9":"<&>","e":1e400}`} {
		f.Add(s)
	}
	a := testAuditor()
	f.Fuzz(func(t *testing.T, in string) {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(in))
		if err != nil {
			return
		}
		if _, ok := v.(map[string]any); !ok {
			return
		}
		canonical, args := canonicalArgs(v, a, len(in))
		if !json.Valid(canonical) || !json.Valid(args) {
			t.Fatalf("%q: invalid output %q / %q", in, canonical, args)
		}
		again, _ := canonicalArgs(decodeArgs(t, string(canonical)), nil, 0)
		if !bytes.Equal(again, canonical) {
			t.Fatalf("%q: canonical %q is not a fixed point (%q)", in, canonical, again)
		}
		var plain []byte
		plain, _ = canonicalArgs(v, nil, 0)
		if !bytes.Equal(plain, canonical) {
			t.Fatalf("%q: canonical form depends on the auditor: %q vs %q", in, plain, canonical)
		}
		if !bytes.Equal(args, canonical) && !strings.Contains(string(args), redacted) {
			t.Fatalf("%q: args %q differ from canonical %q without a redaction", in, args, canonical)
		}
	})
}

// appendStringRef is appendString as it was before it copied runs whole,
// one byte or rune at a time: the reference its output must equal.
func appendStringRef(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

var appendStringSeeds = []string{"", "hello", `a"b\c`, "tab\there\nnew\rret\x00\x1f\x7f", "é ☃ 𝄞",
	"\u2028x\u2029", "bad \xff\xfe utf8 \xe2\x82", "<&>", "end\\"}

func TestAppendString(t *testing.T) {
	for _, s := range appendStringSeeds {
		got, want := appendString(nil, s), appendStringRef(nil, s)
		if !bytes.Equal(got, want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || utf8.ValidString(s) && back != s {
			t.Errorf("%q: %s decodes to %q, %v", s, got, back, err)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range appendStringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := appendString([]byte("x"), s), appendStringRef([]byte("x"), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
		if !json.Valid(got[1:]) {
			t.Fatalf("%q: invalid JSON %s", s, got[1:])
		}
	})
}

// TestAppendRecordAsEncodingJSON: the audit line is what encoding/json
// writes for the record (field names and order), args_hmac and key_id
// included.
func TestAppendRecordAsEncodingJSON(t *testing.T) {
	a := testAuditor()
	rec := AuditRecord{Time: time.Date(2026, 11, 26, 1, 2, 3, 4, time.UTC), Profile: "p", Client: "c", Tool: "fx__echo", Backend: "fx",
		Decision: "allow", Rule: "r", Outcome: OutcomeOK, Error: "e", LatencyMS: 1.5, ArgsHMAC: a.hashArgs([]byte(`{}`)), KeyID: "0011223344556677",
		Args: json.RawMessage(`{}`), ResultBytes: 7, Retries: 1, Fallback: "f", FallbackFor: "g",
		TraceID: "0af7651916cd43dd8448eb211c80319c", CorrelationID: "c0ffee", Parent: "beef"}
	want, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendRecord(nil, &rec); string(got) != string(want)+"\n" {
		t.Errorf("appendRecord\n%s\nencoding/json\n%s", got, want)
	}
}

// BenchmarkArgsHash: the audit record's args_hmac (HMAC-SHA-256 from a pool)
// against the plain SHA-256 it replaced, for small and 1 KiB arguments.
//
//	go test -run '^$' -bench ArgsHash -count 6 ./host/
func BenchmarkArgsHash(b *testing.B) {
	a := testAuditor()
	for _, size := range []int{32, 1024} {
		canonical := []byte(`{"text":"` + strings.Repeat("x", size-11) + `"}`)
		b.Run(fmt.Sprintf("size=%d/hash=sha256", size), func(b *testing.B) {
			b.SetBytes(int64(len(canonical)))
			for b.Loop() {
				sum := sha256.Sum256(canonical)
				_ = hex.EncodeToString(sum[:])
			}
		})
		b.Run(fmt.Sprintf("size=%d/hash=hmac", size), func(b *testing.B) {
			b.SetBytes(int64(len(canonical)))
			for b.Loop() {
				_ = a.hashArgs(canonical)
			}
		})
	}
}

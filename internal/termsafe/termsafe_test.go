package termsafe

import "testing"

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"ok\x1b[2J\x1b]0;pwned\x07\r\ntoolhost: call denied: x", `ok\x1b[2J\x1b]0;pwned\x07\r\ntoolhost: call denied: x`, "ok\\x1b[2J\\x1b]0;pwned\\x07\\r\ntoolhost: call denied: x"},
		{"c1 \u009b31m del \x7f", `c1 \x9b31m del \x7f`, `c1 \x9b31m del \x7f`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`, `bidi \u202egnp.exe`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{`back\slash`, `back\slash`, `back\slash`},
	} {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

func FuzzLine(f *testing.F) {
	f.Add("ok\x1b[2J\r\n\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Line(s) {
			if unsafe(r) {
				t.Fatalf("Line(%q) kept %U", s, r)
			}
		}
		for _, r := range Text(s) {
			if unsafe(r) && r != '\n' && r != '\t' {
				t.Fatalf("Text(%q) kept %U", s, r)
			}
		}
	})
}

package config

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestLocate(t *testing.T) {
	src := `# comment [not.a.header]
top = 1
[servers.a]            # line 3
command = "x"
args = [               # line 5
  "[servers.fake]",
  '[servers.fake2]',
  [ "nested", { k = 1 } ],
]
env = { A = "1", "B.C" = "${X}" }   # line 10
"quoted.key" = 1
dotted . key = 2       # line 12
ml = """
[servers.fake3]
\""""" # line 15: an escaped quote, the delimiter and two more quotes
lit = '''
x = 1
'''
after = 1              # line 19

[ plugins . "p.q" ]    # line 21
path = 'x'
[plugins."p.q".allowed_paths]
"/a" = "ro:x"          # line 24
[[arr]]                # line 25
k = 1
[[arr]]
k = 2
[servers.late.env]     # line 29
X = "1"
[servers.late]         # line 31
tbl = {
  a = 1,               # line 33
  b = { c = 2 },
}
uni = "\u00e9\x41\U0001F600"   # line 36
"\u00e9" = 1           # line 37
`
	if _, err := toml.Decode(src, new(map[string]any)); err != nil {
		t.Fatalf("test input is not valid TOML: %v", err)
	}
	l := locate(src)
	tests := []struct {
		key  toml.Key
		want int
	}{
		{toml.Key{"top"}, 2},
		{toml.Key{"servers"}, 3},
		{toml.Key{"servers", "a"}, 3},
		{toml.Key{"servers", "a", "command"}, 4},
		{toml.Key{"servers", "a", "args"}, 5},
		{toml.Key{"servers", "fake"}, 3}, // falls back to [servers] (implicit at line 3)
		{toml.Key{"servers", "a", "env"}, 10},
		{toml.Key{"servers", "a", "env", "A"}, 10},
		{toml.Key{"servers", "a", "env", "B.C"}, 10},
		{toml.Key{"servers", "a", "quoted.key"}, 11},
		{toml.Key{"servers", "a", "dotted"}, 12},
		{toml.Key{"servers", "a", "dotted", "key"}, 12},
		{toml.Key{"servers", "a", "ml"}, 13},
		{toml.Key{"servers", "a", "lit"}, 16},
		{toml.Key{"servers", "a", "after"}, 19},
		{toml.Key{"servers", "a", "missing"}, 3}, // falls back to the table
		{toml.Key{"plugins", "p.q"}, 21},
		{toml.Key{"plugins", "p.q", "path"}, 22},
		{toml.Key{"plugins", "p.q", "allowed_paths"}, 23},
		{toml.Key{"plugins", "p.q", "allowed_paths", "/a"}, 24},
		{toml.Key{"arr"}, 25},
		{toml.Key{"arr", "k"}, 26},
		{toml.Key{"servers", "late"}, 31}, // the explicit header, not the implicit one
		{toml.Key{"servers", "late", "env", "X"}, 30},
		{toml.Key{"servers", "late", "tbl", "a"}, 33},
		{toml.Key{"servers", "late", "tbl", "b", "c"}, 34},
		{toml.Key{"servers", "late", "uni"}, 36},
		{toml.Key{"servers", "late", "é"}, 37},
		{toml.Key{"nothing"}, 0},
		{toml.Key{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.key.String(), func(t *testing.T) {
			if got := l.line(tt.key); got != tt.want {
				t.Errorf("line(%s) = %d, want %d", tt.key, got, tt.want)
			}
		})
	}
}

// checkLocator checks the locator against the keys the toml package found:
// each one it knows lies within the file, on a line that shows its last part
// (for bare keys).
func checkLocator(t *testing.T, src string) {
	t.Helper()
	md, err := toml.Decode(src, new(map[string]any))
	if err != nil {
		return
	}
	l := locate(src)
	lines := strings.Split(src, "\n")
	for _, k := range md.Keys() {
		n := l.line(k)
		if n < 0 || n > len(lines) {
			t.Fatalf("line(%s) = %d, outside the %d lines", k, n, len(lines))
		}
		last := k[len(k)-1]
		bare := last != "" && strings.Trim(last, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == ""
		if n > 0 && bare && !strings.Contains(lines[n-1], last) {
			// The key may be the implicit parent of a dotted key found
			// elsewhere; its own line must then still contain it.
			if _, ok := l.explicit[k.String()]; ok {
				t.Errorf("line(%s) = %d, but line %d is %q", k, n, n, lines[n-1])
			}
		}
	}
}

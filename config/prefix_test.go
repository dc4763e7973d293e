package config_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestSamePrefix: two backends with the same non-empty prefix (explicit,
// or one's explicit prefix equal to the other's default NAME__) are a load
// error naming both; prefix "" on several backends is allowed (their tool
// names may still collide at run time, which the host settles).
func TestSamePrefix(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"[servers.a]\ncommand = \"x\"\nprefix = \"p_\"\n[servers.b]\ncommand = \"x\"\nprefix = \"p_\"\n",
			`t.toml:6: servers.b.prefix: prefix "p_" is also servers.a's`},
		{"[servers.a]\ncommand = \"x\"\nprefix = \"b__\"\n[plugins.b]\npath = \"b.wasm\"\n",
			`prefix "b__" is also servers.a's`},
	} {
		_, err := config.Parse([]byte(tc.src), &config.Options{Name: "t.toml", Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v; want %s", tc.src, err, tc.want)
		}
	}
	ok := "[servers.a]\ncommand = \"x\"\nprefix = \"\"\n[servers.b]\ncommand = \"x\"\nprefix = \"\"\n"
	if _, err := config.Parse([]byte(ok), &config.Options{Name: "t.toml", Dir: t.TempDir()}); err != nil {
		t.Errorf("prefix \"\" twice: %v", err)
	}
}

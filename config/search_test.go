package config_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestToolSearchKeys: [serve] catalogue and always, and a profile's
// overriding them (always = [] too); the default is "full".
func TestToolSearchKeys(t *testing.T) {
	src := `[serve]
catalogue = "search"
always = ["time__*", "fs__read_file"]

[profiles.full]
catalogue = "full"

[profiles.bare]
always = []

[profiles.own]
always = ["jq__jq"]
`
	cfg, err := config.Parse([]byte(src), &config.Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		profile, mode string
		listed        map[string]bool
	}{
		{"", "search", map[string]bool{"time__now": true, "fs__read_file": true, "fs__write_file": false, "jq__jq": false}},
		{"full", "full", map[string]bool{"time__now": true}}, // always is there, unused in full mode
		{"bare", "search", map[string]bool{"time__now": false, "jq__jq": false}},
		{"own", "search", map[string]bool{"time__now": false, "jq__jq": true}},
		{"nosuch", "search", map[string]bool{"time__now": true}},
	} {
		ts := cfg.ToolSearchOf(c.profile)
		if ts.Catalogue != c.mode {
			t.Errorf("profile %q: catalogue %q, want %q", c.profile, ts.Catalogue, c.mode)
		}
		for name, want := range c.listed {
			if got := ts.ListsAlways(name); got != want {
				t.Errorf("profile %q: ListsAlways(%s) = %v, want %v", c.profile, name, got, want)
			}
		}
	}
	def, err := config.Parse([]byte(`[profiles.p]`), &config.Options{Name: "t.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if ts := def.ToolSearchOf("p"); ts.Catalogue != config.CatalogueFull || len(ts.AlwaysRules) != 0 {
		t.Errorf("default: %+v, want full", ts)
	}
}

// TestToolSearchKeyErrors: a bad mode or glob is an error naming the key
// and its line.
func TestToolSearchKeyErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"[serve]\ncatalogue = \"lazy\"\n", `t.toml:2: serve.catalogue: "lazy" is not a catalogue mode: use "full"`},
		{"[profiles.p]\n\ncatalogue = \"FULL\"\n", `t.toml:3: profiles.p.catalogue: "FULL" is not a catalogue mode`},
		{"[serve]\nalways = [\"a b\"]\n", `t.toml:2: serve.always: element 1 "a b": character ' ' is never in a tool name`},
		{"[profiles.p]\nalways = [\"[\"]\n", `t.toml:2: profiles.p.always: element 1:`},
		{"[serve]\ncatalogue = 3\n", `serve.catalogue`},
	} {
		_, err := config.Parse([]byte(c.src), &config.Options{Name: "t.toml"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}

package host_test

import (
	"slices"
	"testing"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
)

func TestNeeds(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[servers.alpha]
command = "x"

[servers.alpha_beta]
command = "x"
prefix = "alpha__beta_"

[servers.bare]
url = "http://127.0.0.1:1/mcp"
prefix = "zz"

[plugins.gamma]
path = "gamma.wasm"

[tools.alpha__echo]
fallback = "gamma__echo"

[profiles.p]
requires = ["bare"]
`), &config.Options{Name: "needs.toml", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, profile string
		want          []string
	}{
		{"gamma__jq", "", []string{"gamma"}},
		{"alpha__x", "", []string{"alpha"}},
		// alpha__ and alpha__beta_ are both prefixes of the name.
		{"alpha__beta_x", "", []string{"alpha", "alpha_beta"}},
		{"alpha__echo", "", []string{"alpha", "gamma"}},
		{"zzz", "", []string{"bare"}},
		{"gamma__jq", "p", []string{"bare", "gamma"}},
		{"gamma__", "", nil},
		{"nope__x", "", nil},
		{"nope__x", "p", nil},
		{"gamma__jq", "unknown", []string{"gamma"}},
	} {
		if got := host.Needs(cfg, c.name, c.profile); !slices.Equal(got, c.want) {
			t.Errorf("Needs(%q, %q) = %q, want %q", c.name, c.profile, got, c.want)
		}
	}
}

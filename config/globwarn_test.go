package config

import (
	"bytes"
	"github.com/bmatcuk/doublestar/v4"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unmatchedDir holds the golden tests of UnmatchedGlobs: NAME.toml is
// loaded and its warnings, one a line ("none" when there is none), are
// compared with NAME.golden.
const unmatchedDir = "../testdata/config/unmatched"

func TestUnmatchedGlobsGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(unmatchedDir, "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs in %s (%v)", unmatchedDir, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for _, w := range cfg.UnmatchedGlobs() {
				b.WriteString(strings.ReplaceAll(w.Error(), cfg.Dir, dirPlaceholder) + "\n")
			}
			if b.Len() == 0 {
				b.WriteString("none\n")
			}
			golden := strings.TrimSuffix(file, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./config/ -run TestUnmatchedGlobsGolden -update to create it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s:\n--- got\n%s--- want\n%s", file, b.Bytes(), want)
			}
		})
	}
}

func TestGlobMayMatchPrefixed(t *testing.T) {
	for _, c := range []struct {
		glob, prefix string
		want         bool
	}{
		{"github__*", "github__", true},
		{"github__*", "fs__", false},
		{"github__", "github__", false}, // a name is longer than its prefix
		{"github__?", "github__", true},
		{"*", "fs__", true},
		{"**", "fs__", true},
		{"*__read_*", "fs__", true},
		{"*__read_*", "x", true},
		{"fs__read", "fs__", true},
		{"fs_*", "fs__", true},
		{"f?__*", "fs__", true},
		{"f?__*", "fsx__", false},
		{"[a-f]s__*", "fs__", true},
		{"[!a-f]s__*", "fs__", false},
		{"[^f]s__*", "fs__", false},
		{"[]]s__*", "]s__", true},
		{`fs\_\_x`, "fs__", true},
		{`fs\*x`, "fs__", false},
		{"{gh,fs}__x", "fs__", true},
		{"{gh,{ab,fs}}__x", "fs__", true},
		{"{gh,ab}__x", "fs__", false},
		{"{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", "zz", true}, // 512 alternatives: not analysed
		{"fs__[x", "fs__", true},
		{"", "fs__", false},
	} {
		if got := globMayMatchPrefixed(c.glob, c.prefix); got != c.want {
			t.Errorf("globMayMatchPrefixed(%q, %q) = %v, want %v", c.glob, c.prefix, got, c.want)
		}
	}
}

// TestProfileOptional: optional names backends like recommends (an
// unknown one is an error); one also in requires or recommends is an
// error naming both tiers; a disabled optional backend is accepted.
func TestProfileOptional(t *testing.T) {
	const base = "[servers.a]\ncommand = \"x\"\n[servers.off]\ncommand = \"x\"\nenabled = false\n"
	cfg, err := Parse([]byte(base+"[profiles.p]\nrequires = [\"a\"]\nrecommends = [\"a\"]\noptional = [\"off\"]\n"), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Profiles["p"].Optional; len(got) != 1 || got[0] != "off" {
		t.Errorf("optional = %q", got)
	}
	for _, c := range []struct{ src, want string }{
		{"[profiles.p]\noptional = [\"nope\"]\n", `:7: profiles.p.optional: element 1: no backend named "nope"`},
		{"[profiles.p]\nrequires = [\"a\"]\noptional = [\"a\"]\n", `:8: profiles.p.optional: element 1: backend "a" is in both requires and optional of profile "p": an optional backend may be absent, a required one may not`},
		{"[profiles.p]\noptional = [\"off\", \"a\"]\nrecommends = [\"a\"]\n", `:7: profiles.p.optional: element 2: backend "a" is in both recommends and optional`},
		{"[profiles.p]\noptional = \"a\"\n", `profiles.p.optional: must be an array of strings`},
	} {
		_, err := Parse([]byte(base+c.src), testOptions())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
}

// FuzzGlobMayMatchPrefixed: the analysis never warns wrongly: whenever
// the glob matches a name (doublestar, as the policy matches), it may
// match that name's every prefix shorter than the name.
func FuzzGlobMayMatchPrefixed(f *testing.F) {
	for _, s := range [][2]string{{"github__*", "github__x"}, {"*__read_*", "fs__read_a"}, {"{a,b}__[!c]?", "a__dx"}, {`f\s__*`, "fs__x"}, {"[]a]*", "]ab"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, glob, name string) {
		// As Load allows: globs of name characters and glob syntax, over
		// names of A-Z a-z 0-9 _ -.
		if len(glob) > 64 || len(name) > 64 || !doublestar.ValidatePattern(glob) || strings.Trim(glob, nameGlobChars) != "" || toolNameChars(name) != name {
			return
		}
		ok, err := doublestar.Match(glob, name)
		if err != nil || !ok {
			return
		}
		for i := 0; i < len(name); i++ {
			if !globMayMatchPrefixed(glob, name[:i]) {
				t.Fatalf("glob %q matches %q but is said to match nothing with prefix %q", glob, name, name[:i])
			}
		}
	})
}

// FuzzToolNameChars: the loop that replaced a regular expression (issue
// 26: no regexp compiled at init) replaces exactly what
// `[^A-Za-z0-9_-]` matched, invalid UTF-8 included.
func FuzzToolNameChars(f *testing.F) {
	re := regexp.MustCompile(`[^A-Za-z0-9_-]`)
	for _, s := range []string{"", "fs__read", "a b/c", "é-ü", "\xff\xfeab", "x\u2028y", "github.com/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := toolNameChars(s), re.ReplaceAllString(s, "_"); got != want {
			t.Fatalf("toolNameChars(%q) = %q, want %q", s, got, want)
		}
	})
}

package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that every problem is reported
// as an ErrorList of positioned errors, and that an accepted config holds
// only valid backends.
func FuzzParse(f *testing.F) {
	for _, file := range goldenInputs(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("[servers.a]\ncommand = \"${A:-${B}}$$\"\nenv = {\n  K = '''\nx''',\n}\n"))
	f.Add([]byte("[plugins.\"p.q\"]\npath = \"x\"\nmemory = 65537\nallowed_paths = { \"/a\" = \"rw:\" }\n"))
	env := lookupIn(map[string]string{"A": "a", "HOME": "/home/user", "EVERYTHING_KEY": "k"})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, &Options{Name: "fuzz.toml", Dir: "/base", LookupEnv: env})
		lines := strings.Count(string(data), "\n") + 1
		if err != nil {
			if cfg != nil {
				t.Fatal("config and error both returned")
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error is not a non-empty ErrorList: %#v", err)
			}
			for _, e := range list {
				if e.Line < 0 || e.Line > lines || e.Msg == "" || e.File != "fuzz.toml" {
					t.Fatalf("bad error %#v in a %d-line input", e, lines)
				}
			}
			return
		}
		checkLocator(t, string(data))
		for _, name := range cfg.Backends() {
			if !backendNameRE.MatchString(name) || strings.Contains(name, "__") {
				t.Fatalf("accepted invalid name %q", name)
			}
		}
		for name, s := range cfg.Servers {
			if s.Name != name || (s.Command == "") == (s.URL == "") || s.Line < 1 || s.Line > lines {
				t.Fatalf("accepted invalid server %+v", s)
			}
		}
		for name, p := range cfg.Plugins {
			if p.Name != name || p.Path == "" || p.Line < 1 || p.Line > lines || int64(p.Memory)%wasmPage != 0 {
				t.Fatalf("accepted invalid plugin %+v", p)
			}
		}
		if cfg.Host.CallTimeout <= 0 {
			t.Fatalf("call timeout %v", cfg.Host.CallTimeout)
		}
	})
}

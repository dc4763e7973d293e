package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

var entryLineRE = regexp.MustCompile(`^(#.*|\[servers\.x\]|[a-z_]+ = .*|)$`)

// FuzzAddFromRegistry: whatever a server.json holds, toolhost add either
// refuses it or writes one [servers.x] table that loads (every ${VAR} set)
// with nothing else in the file, each line a comment or a key, without a
// raw control character.
func FuzzAddFromRegistry(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/add/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"name":"a/b","packages":[{"registryType":"npm","identifier":"x","version":"1","environmentVariables":[{"name":"A","value":"]\n[policy]"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s registryServer
		if json.Unmarshal(data, &s) != nil {
			return
		}
		a, err := fromRegistry(&s)
		if err != nil {
			return
		}
		entry := a.render("x")
		for _, line := range strings.Split(entry, "\n") {
			if !entryLineRE.MatchString(line) || strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
				t.Fatalf("line %q of:\n%s", line, entry)
			}
		}
		cfg, err := config.Parse([]byte(entry), &config.Options{Name: "fuzz.toml", Dir: t.TempDir(), LookupEnv: func(string) (string, bool) { return "x", true }})
		if err != nil {
			t.Fatalf("%v\n%s", err, entry)
		}
		if len(cfg.Backends()) != 1 || cfg.Servers["x"] == nil || len(cfg.Profiles) > 0 || len(cfg.Policy.Allow)+len(cfg.Policy.Deny) > 0 {
			t.Fatalf("not one table:\n%s", entry)
		}
	})
}

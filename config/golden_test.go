package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/config")

// goldenDir holds the golden tests: NAME.toml is loaded and the result, the
// resolved Config as indented JSON or the error list, is compared with
// NAME.golden.
const goldenDir = "../testdata/config"

// goldenEnv is the environment the golden files are loaded with.
var goldenEnv = map[string]string{
	"EVERYTHING_KEY": "ek-123",
	"HOME":           "/home/user",
	"LOG_LEVEL":      "",
	"VERSION":        "1.2.3",
}

// dirPlaceholder replaces the directory of the golden files in their output,
// so that goldens do not depend on where the repository is checked out.
const dirPlaceholder = "$DIR"

func goldenInputs(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs in %s (%v)", goldenDir, err)
	}
	return files
}

func TestGolden(t *testing.T) {
	for _, file := range goldenInputs(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			got := goldenOutput(t, file)
			golden := strings.TrimSuffix(file, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./config/ -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s (rerun with -update if the change is intended):\n--- got\n%s\n--- want\n%s", file, golden, got, want)
			}
		})
	}
}

func goldenOutput(t *testing.T, file string) []byte {
	cfg, err := Load(file, &Options{LookupEnv: lookupIn(goldenEnv)})
	if err != nil {
		if strings.HasPrefix(filepath.Base(file), "bad_") {
			return []byte("error:\n" + err.Error() + "\n")
		}
		t.Fatalf("Load(%s): %v", file, err)
	}
	if strings.HasPrefix(filepath.Base(file), "bad_") {
		t.Fatalf("Load(%s) succeeded; files named bad_* must fail", file)
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	out = bytes.ReplaceAll(out, []byte(dir), []byte(dirPlaceholder))
	return append(out, '\n')
}

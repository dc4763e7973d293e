package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/ociplugin/ocitest"
	"github.com/toolhost/toolhost/internal/testutil"
)

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%v: run make plugins", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestOCIReadme runs the README's "Plugins from OCI registries" commands
// with a real toolhost binary against an in-process registry (the
// README's localhost:5000), then stops the registry: status runs the
// cached module and says so.
func TestOCIReadme(t *testing.T) {
	root := testutil.Root()
	digest := fileDigest(t, filepath.Join(root, "plugins", "time.wasm"))
	reg := ocitest.New(t)
	blocks := mdBlocks(t, filepath.Join(root, "README.md"))
	const heading = "Plugins from OCI registries"
	fix := func(s string) string { return strings.ReplaceAll(s, "localhost:5000", reg.Host) }
	script, conf := fix(block(t, blocks, heading, "sh", 0)), fix(block(t, blocks, heading, "toml", 0))

	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "plugins"), filepath.Join(dir, "plugins")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	cache := t.TempDir() // the default cache of pull (no configuration) and of oci.toml
	sh := func(script string) (string, error) {
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "XDG_CACHE_HOME="+cache, "TOOLHOST_CONFIG=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := sh(script)
	if err != nil {
		t.Fatalf("README commands: %v\n%s", err, out)
	}
	t.Logf("README commands:\n%s", out)
	ref := "oci+http://" + reg.Host + "/toolhost/time:1"
	for _, want := range []string{
		"pushed plugins/time.wasm to " + ref,                          // push
		"digest   sha256:" + digest,                                   // push and pull
		"/toolhost/wasm/oci/sha256/" + digest,                         // pull: the cached file
		"backend clock: " + ref + " → sha256:" + digest + " (cached)", // check
		"UTC", // call
	} {
		if !strings.Contains(out, want) {
			t.Errorf("README commands: output lacks %q:\n%s", want, out)
		}
	}

	out, err = sh("toolhost --config oci.toml prewarm")
	if err != nil || !strings.Contains(out, "clock: compiled and listed") {
		t.Fatalf("prewarm of an OCI plugin: %v\n%s", err, out)
	}

	reg.Stop()
	out, err = sh("toolhost --config oci.toml status")
	if err != nil || !strings.Contains(out, "clock: "+ref+" → sha256:"+digest+" (cached, registry unreachable)") {
		t.Fatalf("status with the registry stopped: %v\n%s", err, out)
	}
	out, err = sh("toolhost --config oci.toml check")
	if err != nil || !strings.Contains(out, "(cached, registry unreachable)") {
		t.Fatalf("check with the registry stopped: %v\n%s", err, out)
	}
}

// TestOCICommandErrors: each refusal of pull, push and check has its own
// message and exit status.
func TestOCICommandErrors(t *testing.T) {
	root := testutil.Root()
	timeWasm := filepath.Join(root, "plugins", "time.wasm")
	fileDigest(t, timeWasm)
	reg := ocitest.New(t)
	cache := t.TempDir()
	cfg := writeConfig(t, "[host]\ncache_dir = \""+cache+"\"\n\n[plugins.clock]\npath = \""+reg.Ref("t/time:1")+"\"\nsha256 = \""+strings.Repeat("0", 64)+"\"\n")
	script := filepath.Join(t.TempDir(), "script.wasm")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o600)

	if code, out, errOut := runCLI("--config", cfg, "push", timeWasm, reg.Ref("t/time:1")); code != exitOK {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"pin mismatch", []string{"pull", reg.Ref("t/time:1"), "--sha256", strings.Repeat("0", 64)}, exitUsage, "does not match its sha256 pin"},
		{"check with a pin mismatch", []string{"check"}, exitUsage, "plugins.clock.path"},
		{"plain http off loopback", []string{"pull", "oci+http://registry.example.com/t/time:1"}, exitUsage, "only for a registry on loopback"},
		{"no tag", []string{"pull", "oci://ghcr.io/t/time"}, exitUsage, "no tag or digest"},
		{"push a script", []string{"push", script, reg.Ref("t/x:1")}, exitUsage, "not a WebAssembly module"},
		{"unknown tag", []string{"pull", reg.Ref("t/time:2")}, exitCallError, "OCI registry pull failed"},
		{"usage", []string{"pull"}, exitUsage, "usage: toolhost pull"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"--config", cfg}, c.args...)...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", code, c.code, c.want, out, errOut)
			}
		})
	}
	reg.Stop()
	if code, out, errOut := runCLI("--config", cfg, "pull", reg.Ref("t/never:1")); code != exitCallError || !strings.Contains(errOut, "no cached copy") {
		t.Errorf("pull from a stopped registry: exit %d\n%s%s", code, out, errOut)
	}
}

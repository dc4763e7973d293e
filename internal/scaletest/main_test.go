package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
)

// testEnv is an env as setup leaves it, without processes.
func testEnv(t *testing.T) *env {
	root := testutil.Root()
	*toolhostBin = filepath.Join(root, "bin", "toolhost")
	*fixtureBin = filepath.Join(root, "bin", "mcpfixture")
	*pluginWasm = filepath.Join(root, "plugins", "time.wasm")
	e := &env{dir: t.TempDir(), dbURL: "postgres://postgres@/scaletest?host=/tmp/x&sslmode=disable", lbPort: 18808, sessPort: 18809,
		tokens: map[string]string{"load": randHex(16), "granted": randHex(16), "limited": randHex(16), "session": randHex(16)}}
	for i, name := range []string{"r1", "r2", "r3", "s1", "s2"} {
		e.replicas = append(e.replicas, &replica{name: name, port: 18810 + i, session: name[0] == 's'})
	}
	return e
}

// TestReplicaConfig: the configuration the replicas get is valid, the same
// for both kinds but [serve] stateless, with the shared store and a token
// per client group.
func TestReplicaConfig(t *testing.T) {
	e := testEnv(t)
	for _, stateless := range []bool{true, false} {
		cfg, err := config.Parse([]byte(e.replicaConfig(stateless)), &config.Options{Name: "replica.toml", Dir: e.dir})
		if err != nil {
			t.Fatalf("stateless=%v: %v", stateless, err)
		}
		if cfg.Serve.Stateless != stateless || cfg.Store.URL != e.dbURL || len(cfg.Serve.Clients) != 4 {
			t.Errorf("stateless=%v: got stateless %v, store %q, %d clients", stateless, cfg.Serve.Stateless, cfg.Store.URL, len(cfg.Serve.Clients))
		}
	}
	a, b := e.replicaConfig(true), e.replicaConfig(false)
	if strings.Replace(a, "stateless = true", "stateless = false", 1) != b {
		t.Errorf("the two configurations differ beyond stateless:\n%s\n---\n%s", a, b)
	}
}

// TestHAProxyConfig: haproxy -c accepts the configuration; the sessions
// backend sticks on Mcp-Session-Id unless -no-affinity; the stateless one
// retries only connection failures.
func TestHAProxyConfig(t *testing.T) {
	e := testEnv(t)
	for _, noAff := range []bool{false, true} {
		*noAffinity = noAff
		cfg := e.haproxyConfig()
		_, sess, _ := strings.Cut(cfg, "backend sessions")
		if got := strings.Contains(sess, "stick match req.hdr(Mcp-Session-Id)"); got == noAff {
			t.Errorf("no-affinity=%v: stick match in the sessions backend: %v\n%s", noAff, got, cfg)
		}
		if !strings.Contains(cfg, "retry-on conn-failure\n") {
			t.Errorf("retry-on is not conn-failure alone:\n%s", cfg)
		}
		bin, err := exec.LookPath("haproxy")
		if err != nil {
			bin = "/usr/sbin/haproxy"
		}
		if _, err := os.Stat(bin); err != nil {
			continue // (make scale-test installs it)
		}
		p := filepath.Join(e.dir, "haproxy.cfg")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "-c", "-f", p).CombinedOutput(); err != nil {
			t.Errorf("haproxy -c: %v\n%s", err, out)
		}
	}
	*noAffinity = false
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in       string
		n, burst int
		per      time.Duration
		bad      bool
	}{
		{in: "120/m", n: 120, per: time.Minute, burst: 120},
		{in: "60/m burst 10", n: 60, per: time.Minute, burst: 10},
		{in: "5/s", n: 5, per: time.Second, burst: 5},
		{in: "1/h", n: 1, per: time.Hour, burst: 1},
		{in: "0/m", bad: true},
		{in: "10/d", bad: true},
		{in: "10", bad: true},
		{in: "10/m burst", bad: true},
		{in: "10/m burst -1", bad: true},
		{in: "'; DROP TABLE rate_buckets; --", bad: true},
	} {
		n, per, burst, err := parseRate(c.in)
		if (err != nil) != c.bad || !c.bad && (n != c.n || per != c.per || burst != c.burst) {
			t.Errorf("parseRate(%q) = %d, %v, %d, %v", c.in, n, per, burst, err)
		}
	}
}

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/oauthtest"
)

// A test binary run with TOOLHOST_TEST_BROWSER=1 is the "browser" of
// `toolhost login` ($BROWSER): it opens the URL it is given, following the
// authorization server's redirect to the login's loopback callback.
func init() {
	if os.Getenv("TOOLHOST_TEST_BROWSER") != "1" {
		return
	}
	resp, err := http.Get(os.Args[len(os.Args)-1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "test browser:", err)
		os.Exit(1)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "test browser: status", resp.Status)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestLoginCLI(t *testing.T) {
	as := oauthtest.New(t, &oauthtest.Options{Scopes: []string{"read"}})
	cfg := writeConfig(t, fmt.Sprintf("[servers.remote]\nurl = %q\nmax_restarts = 0\n[servers.remote.oauth]\nscopes = [\"read\"]\n", as.MCPURL))
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("BROWSER", os.Args[0])
	t.Setenv("TOOLHOST_TEST_BROWSER", "1")
	var all strings.Builder
	cli := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errs := runCLI(append([]string{"--config", cfg, "--log-level", "trace"}, args...)...)
		all.WriteString(out + errs)
		if code != want {
			t.Fatalf("toolhost %s = %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errs)
		}
		return out, errs
	}

	out, _ := cli(0, "check")
	if !strings.Contains(out, "oauth remote: not logged in: run `toolhost login remote`") {
		t.Errorf("check does not say to log in:\n%s", out)
	}
	out, errs := cli(0, "status", "--json")
	if !strings.Contains(out, `"state": "needs_login"`) || !strings.Contains(errs, "run `toolhost login remote`") {
		t.Errorf("status before login:\n%s\n%s", out, errs)
	}

	out, errs = cli(0, "login", "remote")
	if !strings.Contains(out, "logged in to remote") || !strings.Contains(errs, as.URL+"/authorize?") {
		t.Errorf("login:\nstdout: %s\nstderr: %s", out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(home, "toolhost", "tokens", "remote-*.json"))
	if len(files) != 1 {
		t.Fatalf("token files: %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi.Mode(), err)
	}

	out, _ = cli(0, "call", "remote__echo", "--args", `{"text":"after login"}`)
	if !strings.Contains(out, "after login") {
		t.Errorf("call after login: %s", out)
	}
	out, _ = cli(0, "check")
	if !strings.Contains(out, "oauth remote: logged in") {
		t.Errorf("check after login:\n%s", out)
	}
	out, _ = cli(0, "status", "--json")
	if !strings.Contains(out, `"state": "ready"`) {
		t.Errorf("status after login:\n%s", out)
	}

	cli(0, "logout", "remote")
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Errorf("logout left the token file: %v", err)
	}
	_, errs = cli(3, "call", "remote__echo", "--args", `{"text":"x"}`)
	if !strings.Contains(errs, "run `toolhost login remote`") {
		t.Errorf("call after logout does not say to log in:\n%s", errs)
	}
	cli(2, "login", "nosuch")

	for _, s := range as.Secrets() {
		if strings.Contains(all.String(), s) {
			t.Errorf("secret %.6s... in the CLI's output", s)
		}
	}
}

func TestLoginServerWithoutAuth(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	cfg := writeConfig(t, fmt.Sprintf("[servers.open]\nurl = %q\n[servers.open.oauth]\n", hs.URL))
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	code, out, errs := runCLI("--config", cfg, "login", "open", "--no-browser")
	if code != 0 || !strings.Contains(out, "without asking for authorization") {
		t.Fatalf("login to a server without auth = %d\n%s\n%s", code, out, errs)
	}
	if files, _ := filepath.Glob(filepath.Join(home, "toolhost", "tokens", "*")); len(files) != 0 {
		t.Errorf("token files: %v", files)
	}
}

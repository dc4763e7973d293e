package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
)

const hostileName = `'; DROP TABLE audit; --`

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// api makes a REST request of a serve as token, and decodes its JSON answer
// into out; it returns the status.
func api(t *testing.T, base, token, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

type auditPage struct {
	Records    []host.AuditRecord `json:"records"`
	NextCursor string             `json:"next_cursor"`
}

// TestServeAuditStore runs toolhost serve on a SQLite file and on
// PostgreSQL: calls made over the REST API (with a correlation id) and by
// a go-sdk client (a hostile tool name) are rows that GET /api/v1/audit
// pages through (a non-admin sees only its own) and `toolhost audit` and
// `toolhost store check` read; GET /api/v1/store reports the store.
func TestServeAuditStore(t *testing.T) {
	for _, e := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "state", "toolhost.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
	} {
		t.Run(e.name, func(t *testing.T) {
			storeURL := e.url(t)
			cfg := writeConfig(t, `
[servers.fx]
command = "@FIXTURE@"
startup_timeout = "5m"

[store]
url = "`+storeURL+`"

[serve.clients.ops]
token = "ops-token-0123456789"
admin = true

[serve.clients.user]
token = "user-token-0123456789"
`)
			endpoint := startServeCmd(t, cfg)
			base := strings.TrimSuffix(endpoint, "/mcp")
			for i := range 5 {
				var resp struct {
					CorrelationID string `json:"correlation_id"`
				}
				code := api(t, base, "user-token-0123456789", "POST", "/api/v1/mcp/invoke",
					`{"name":"fx__echo","params":{"text":"hi"},"correlation_id":"corr-`+string(rune('a'+i))+`"}`, &resp)
				if code != 200 || resp.CorrelationID != "corr-"+string(rune('a'+i)) {
					t.Fatalf("invoke: %d %+v", code, resp)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "audit-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
				HTTPClient: &http.Client{Transport: bearer{"ops-token-0123456789"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": hostileName}}); err != nil {
				t.Fatal(err)
			}
			cs.Close()

			// Every row, two at a time, as the admin.
			var all []host.AuditRecord
			testutil.Eventually(t, 20*time.Second, func() bool {
				all = nil
				cursor := ""
				for {
					var p auditPage
					path := "/api/v1/audit?limit=2"
					if cursor != "" {
						path += "&cursor=" + cursor
					}
					if code := api(t, base, "ops-token-0123456789", "GET", path, "", &p); code != 200 {
						t.Fatalf("GET %s: %d", path, code)
					}
					all = append(all, p.Records...)
					if p.NextCursor == "" {
						return len(all) >= 6
					}
					cursor = p.NextCursor
				}
			}, "6 audit rows in the store: ", func() string { return fmt.Sprintf("%+v", all) })
			seen := map[string]bool{}
			for _, r := range all {
				if seen[r.CorrelationID] {
					t.Fatalf("record %s twice in the pages", r.CorrelationID)
				}
				seen[r.CorrelationID] = true
			}
			for _, id := range []string{"corr-a", "corr-e"} {
				if !seen[id] {
					t.Fatalf("no record with the invoke's correlation id %s: %+v", id, all)
				}
			}
			var hostile auditPage
			if code := api(t, base, "ops-token-0123456789", "GET", "/api/v1/audit?tool="+neturl.QueryEscape(hostileName)+"&client="+neturl.QueryEscape(hostileName), "", &hostile); code != 200 || len(hostile.Records) != 0 {
				t.Fatalf("a hostile filter: %d %+v", code, hostile)
			}
			var ops auditPage
			if code := api(t, base, "ops-token-0123456789", "GET", "/api/v1/audit?client=ops&tool=fx__*", "", &ops); code != 200 ||
				len(ops.Records) != 1 || !strings.Contains(string(ops.Records[0].Args), "DROP TABLE") || len(ops.Records[0].CorrelationID) != 32 {
				t.Fatalf("the MCP call's record: %d %+v", code, ops)
			}
			// A client that is not an admin sees its own records only.
			var mine auditPage
			if code := api(t, base, "user-token-0123456789", "GET", "/api/v1/audit?limit=1000", "", &mine); code != 200 || len(mine.Records) != 5 {
				t.Fatalf("user's records: %d %d", code, len(mine.Records))
			}
			if code := api(t, base, "user-token-0123456789", "GET", "/api/v1/audit?client=ops", "", nil); code != 403 {
				t.Fatalf("user asking for ops's records: %d, want 403", code)
			}
			for _, bad := range []string{"limit=0", "limit=1001", "cursor=nope", "since=yesterday", "until=2026-01-01T00:00:00Z&since=2026-02-01T00:00:00Z", "colour=red"} {
				if code := api(t, base, "ops-token-0123456789", "GET", "/api/v1/audit?"+bad, "", nil); code != 400 {
					t.Errorf("GET /api/v1/audit?%s: %d, want 400", bad, code)
				}
			}
			var st host.StoreStatus
			if code := api(t, base, "ops-token-0123456789", "GET", "/api/v1/store", "", &st); code != 200 || st.Engine != e.name || st.Mode != "persistent" || !st.Audit || st.Written < 6 {
				t.Fatalf("GET /api/v1/store: %d %+v", code, st)
			}

			// The CLI reads the same store.
			code, stdout, stderr := runCLI("--config", cfg, "audit", "--correlation", "corr-c", "--json")
			var rec host.AuditRecord
			if code != exitOK || strings.Count(stdout, "\n") != 1 || json.Unmarshal([]byte(stdout), &rec) != nil || rec.Tool != "fx__echo" || rec.Client != "user" {
				t.Fatalf("audit --correlation corr-c --json: exit %d, %q, %q", code, stdout, stderr)
			}
			code, stdout, stderr = runCLI("--config", cfg, "audit", "--tool", "fx__*", "--client", "user", "--since", "1h", "--limit", "3")
			if code != exitOK || strings.Count(stdout, "\n") != 4 || !strings.HasPrefix(stdout, "TIME") || !strings.Contains(stdout, "corr-e") {
				t.Fatalf("audit table: exit %d\n%s%s", code, stdout, stderr)
			}
			code, stdout, _ = runCLI("--config", cfg, "audit", "--client", hostileName)
			if code != exitOK || strings.Count(stdout, "\n") != 1 {
				t.Fatalf("audit --client hostile: exit %d\n%s", code, stdout)
			}
			if code, _, stderr := runCLI("--config", cfg, "audit", "--since", "last tuesday"); code != exitUsage || !strings.Contains(stderr, "--since") {
				t.Fatalf("audit --since junk: exit %d %q", code, stderr)
			}
			code, stdout, stderr = runCLI("--config", cfg, "store", "check")
			if code != exitOK || !strings.Contains(stdout, "engine:  "+e.name) || !strings.Contains(stdout, "pending: none") {
				t.Fatalf("store check: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
}

// TestStoreCommands: store migrate on a new file lists what it applied,
// then nothing; check of a corrupt file names it and fails (exit 3), as
// does serve's start (exit 2, naming the URL) unless [store] required =
// false, when serve warns and runs with its state in memory.
func TestStoreCommands(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	cfg := writeConfig(t, "[store]\nurl = \"sqlite://"+path+"\"\n")
	code, stdout, stderr := runCLI("--config", cfg, "store", "migrate")
	if code != exitOK || !strings.Contains(stdout, "applied 00001 00001_init.sql") {
		t.Fatalf("migrate: exit %d %q %q", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI("--config", cfg, "store", "migrate"); code != exitOK || !strings.Contains(stdout, "nothing to apply") {
		t.Fatalf("second migrate: exit %d %q", code, stdout)
	}
	if code, _, _ := runCLI("store", "frobnicate"); code != exitUsage {
		t.Fatalf("store frobnicate: exit %d", code)
	}

	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, bytes.Repeat([]byte("not a database, just text. "), 400), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := writeConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n\n[store]\nurl = \"sqlite://"+corrupt+"\"\n")
	code, _, stderr = runCLI("--config", bad, "store", "check")
	if code != exitCallError || !strings.Contains(stderr, corrupt) || !strings.Contains(stderr, "corrupt") {
		t.Fatalf("check of a corrupt file: exit %d %q", code, stderr)
	}
	code, _, stderr = runCLI("--config", bad, "audit")
	if code != exitCallError || !strings.Contains(stderr, corrupt) {
		t.Fatalf("audit of a corrupt file: exit %d %q", code, stderr)
	}
	// serve refuses to start on it.
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	out, err := exec.Command(bin, "--config", bad, "serve", "--listen", "127.0.0.1:0").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "sqlite://"+corrupt) || !strings.Contains(string(out), "required = false") {
		t.Fatalf("serve on a corrupt store: %v\n%s", err, out)
	}
	// Unless the store is not required: memory-only mode, in status.
	optional := writeConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n\n[store]\nurl = \"sqlite://"+corrupt+"\"\nrequired = false\n\n[serve.clients.ops]\ntoken = \"ops-token-0123456789\"\nadmin = true\n")
	p := startServeArgs(t, "", "--config", optional, "serve", "--listen", "127.0.0.1:0")
	if !strings.Contains(p.stderr.String(), "memory only") {
		t.Fatalf("no warning of memory-only mode:\n%s", p.stderr)
	}
	var st host.StoreStatus
	base := strings.TrimSuffix(p.url, "/mcp")
	if code := api(t, base, "ops-token-0123456789", "GET", "/api/v1/store", "", &st); code != 200 || st.Mode != "memory" || st.Engine != "sqlite" {
		t.Fatalf("store status in memory-only mode: %d %+v", code, st)
	}
	// The audit API answers from the in-memory store.
	api(t, base, "ops-token-0123456789", "POST", "/api/v1/mcp/invoke", `{"name":"fx__echo","params":{"text":"x"},"correlation_id":"mem-1"}`, nil)
	testutil.Eventually(t, time.Minute, func() bool {
		var p auditPage
		api(t, base, "ops-token-0123456789", "GET", "/api/v1/audit?correlation_id=mem-1", "", &p)
		return len(p.Records) == 1
	}, "the record in the in-memory store")
}

// TestAuditStoreReadme runs the README's "Audit trail in the store": its
// [store] table (the url moved to a temporary file) is a valid
// configuration, and each of its toolhost commands exits 0 on it.
func TestAuditStoreReadme(t *testing.T) {
	blocks := mdBlocks(t, filepath.Join(testutil.Root(), "README.md"))
	toml := block(t, blocks, "Audit trail in the store", "toml", 0)
	db := filepath.Join(t.TempDir(), "toolhost.db")
	toml = strings.Replace(toml, "sqlite:///var/lib/toolhost/toolhost.db", "sqlite://"+db, 1)
	cfg := writeConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n\n"+toml)
	if code, _, stderr := runCLI("--config", cfg, "call", "fx__echo", "--args", `{"text":"hi"}`); code != exitOK {
		t.Fatalf("a call to audit: exit %d %s", code, stderr)
	}
	n := 0
	for _, line := range strings.Split(block(t, blocks, "Audit trail in the store", "sh", 0), "\n") {
		line, _, _ = strings.Cut(line, "#")
		args := strings.Fields(strings.ReplaceAll(line, "'", ""))
		if len(args) == 0 || args[0] != "toolhost" {
			continue
		}
		n++
		if code, stdout, stderr := runCLI(append([]string{"--config", cfg}, args[1:]...)...); code != exitOK {
			t.Errorf("%s: exit %d\n%s%s", line, code, stdout, stderr)
		}
	}
	if code, stdout, _ := runCLI("--config", cfg, "audit", "--tool", "fx__*"); code != exitOK || !strings.Contains(stdout, "fx__echo") {
		t.Errorf("toolhost call's record is not in the store:\n%s", stdout)
	}
	if n != 5 {
		t.Fatalf("%d toolhost commands in the README section, want 5", n)
	}
}

package host_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

const secret = "tok-very-secret"

// auditTestKey is the audit key of the tests that check ArgsHMAC.
var auditTestKey = []byte("0123456789abcdef0123456789abcdef")

// policyHost starts a Host on toml with @FIXTURE@, @PDKECHO@ (the pdk echo
// plugin: tool echo, "text" required) and @ECHO@ (the raw-ABI echo plugin)
// replaced, logging everything (Trace) into the returned buffer.
func policyHost(t *testing.T, toml string, opts *host.Options) (*host.Host, *testutil.Buffer) {
	t.Helper()
	cfg, err := parsePolicy(t, toml)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	if opts == nil {
		opts = &host.Options{}
	}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "host", Output: logs, Level: hclog.Trace})
	opts.TerminateGrace = 500 * time.Millisecond
	if opts.StartupTimeout == 0 {
		// On a busy machine under -race, compiling and warming a plugin
		// can take longer than the default 30s: New waits for it, so the
		// test's calls find it ready. (startup_timeout in the TOML is
		// overridden; pass StartupTimeout to test it.)
		opts.StartupTimeout = 10 * time.Minute
	}
	h, err := host.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return h, logs
}

func parsePolicy(t *testing.T, toml string) (*config.Config, error) {
	t.Helper()
	dir := filepath.Join(testutil.Root(), "testdata", "plugins")
	r := strings.NewReplacer("@FIXTURE@", testutil.Fixture(t),
		"@PDKECHO@", wasmbuild.Build(t, dir, "./pdkecho"), "@ECHO@", wasmbuild.Build(t, dir, "./echo"),
		"@CACHE@", t.TempDir())
	return config.Parse([]byte(r.Replace(toml)), &config.Options{Name: "test.toml", Dir: t.TempDir(), LookupEnv: func(k string) (string, bool) {
		if k == "SECRET_TOKEN" {
			return secret, true
		}
		return os.LookupEnv(k)
	}})
}

const policyConfig = `
[host]
cache_dir = "@CACHE@"

[servers.fx]
command = "@FIXTURE@"
args = ["-extra"]
deny_tools = ["crash"]

[plugins.wasm]
path = "@PDKECHO@"
tools = ["ech?"]

[servers.down]
command = "toolhost-no-such-program"

[policy]
allow = ["fx__*", "wasm__*"]
deny = ["*__delete_*", "fx__sleep", "fx__delete_all"]

[profiles.review]
allow = ["fx__echo", "fx__add", "wasm__*", "fx__delete_*"]
deny = ["fx__add"]
requires = ["fx"]
recommends = ["down"]

[profiles.ops]
deny = ["wasm__*"]

[profiles.broken]
requires = ["down"]
`

func toolNames(tools []host.Tool, err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, tool := range tools {
		out = append(out, tool.Name)
	}
	return out
}

func TestPolicyAndProfiles(t *testing.T) {
	var mu sync.Mutex
	var recs []host.AuditRecord
	h, logs := policyHost(t, policyConfig, &host.Options{Audit: func(r host.AuditRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}})
	ctx := context.Background()

	// Backend level: tools/deny_tools and an uncompilable schema keep tools
	// out of the catalogue altogether.
	all := toolNames(h.Tools(ctx))
	want := []string{"fx__add", "fx__badout", "fx__big", "fx__echo", "fx__fail", "fx__nested", "wasm__echo"}
	if !slices.Equal(all, want) {
		t.Fatalf("host catalogue %v, want %v", all, want)
	}
	var excluded []string
	for _, e := range h.Excluded() {
		excluded = append(excluded, e.Backend+"/"+e.Tool+": "+e.Reason)
	}
	if len(excluded) != 2 || !strings.Contains(excluded[0], `fx/badschema: inputSchema does not compile`) ||
		excluded[1] != `fx/crash: servers.fx.deny_tools[0] "crash"` {
		t.Errorf("excluded %q", excluded)
	}
	if !strings.Contains(logs.String(), "tool dropped: its schema does not compile") {
		t.Errorf("the dropped tool is not logged")
	}
	if _, err := h.CallTool(ctx, "fx__crash", nil); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("a tool removed by deny_tools: %v, want ErrUnknownTool", err)
	}

	review, err := h.Profile("review")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `profile recommends a backend that is not ready: profile=review backend=down`) {
		t.Errorf("recommends: no warning logged")
	}
	if got := toolNames(review.Tools(ctx)); !slices.Equal(got, []string{"fx__echo", "wasm__echo"}) {
		t.Errorf("review catalogue %v", got)
	}
	ops, err := h.Profile("ops")
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(ops.Tools(ctx)); slices.Contains(got, "wasm__echo") || !slices.Contains(got, "fx__fail") {
		t.Errorf("ops catalogue %v", got)
	}

	denied := []struct {
		view     interface{}
		tool     string
		rule     string
		profile  string
		describe string
	}{
		{h, "fx__delete_all", `policy.deny[2] "fx__delete_all"`, "", "the most specific deny decides"},
		{h, "fx__sleep", `policy.deny[1] "fx__sleep"`, "", "global deny"},
		{review, "fx__add", `profiles.review.deny[0] "fx__add"`, "review", "profile deny beats profile allow"},
		{review, "fx__delete_all", `policy.deny[2] "fx__delete_all"`, "review", "a profile never widens"},
		{review, "fx__fail", `profiles.review.allow (no glob matches)`, "review", "a tool of another view only"},
		{ops, "wasm__echo", `profiles.ops.deny[0] "wasm__*"`, "ops", "profile without allow list"},
	}
	for _, d := range denied {
		var err error
		switch v := d.view.(type) {
		case *host.Host:
			_, err = v.CallTool(ctx, d.tool, map[string]any{"text": "x"})
		case *host.View:
			_, err = v.CallTool(ctx, d.tool, map[string]any{"text": "x"})
		}
		var tna *host.ToolNotAllowedError
		if !errors.Is(err, host.ErrToolNotAllowed) || !errors.As(err, &tna) || tna.Rule != d.rule || tna.Profile != d.profile {
			t.Errorf("%s: %s: got %v, want ErrToolNotAllowed by %s", d.describe, d.tool, err, d.rule)
		}
	}
	// Allowed calls, through a profile, to a server and to a plugin.
	if res, err := review.CallTool(ctx, "fx__echo", map[string]any{"text": "reviewed"}); err != nil || text(t, res) != "reviewed" {
		t.Errorf("review fx__echo: %v %v", res, err)
	}
	if res, err := review.CallTool(ctx, "wasm__echo", map[string]any{"text": "wasm"}); err != nil || res.IsError || text(t, res) != "wasm" {
		t.Errorf("review wasm__echo: %v %v", res, err)
	}
	// A name that exists nowhere stays ErrUnknownTool, and suggests only
	// names of the caller's view.
	_, err = review.CallTool(ctx, "fx__fai", nil)
	if !errors.Is(err, host.ErrUnknownTool) || strings.Contains(err.Error(), "fx__fail") {
		t.Errorf("unknown tool in review: %v", err)
	}

	// requires: fails fast, naming the backend.
	broken, err := h.Profile("broken")
	if err != nil {
		t.Fatal(err)
	}
	_, err = broken.CallTool(ctx, "fx__echo", map[string]any{"text": "x"})
	if !errors.Is(err, host.ErrRequiredBackend) || !strings.Contains(err.Error(), `"down"`) {
		t.Errorf("broken profile: %v, want ErrRequiredBackend naming down", err)
	}
	if _, err := h.Profile("nope"); !errors.Is(err, host.ErrUnknownProfile) {
		t.Errorf("unknown profile: %v", err)
	}

	// Decisions give the rule of every catalogue tool.
	for _, d := range review.Decisions() {
		if d.Name == "fx__echo" && (!d.Allowed || d.Rule != `profiles.review.allow[0] "fx__echo"`) {
			t.Errorf("decision %+v", d)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	outcomes := map[string]int{}
	for _, r := range recs {
		outcomes[r.Outcome]++
		if r.Outcome == host.OutcomeDenied && (r.Decision != "deny" || r.Rule == "" || r.Backend == "") {
			t.Errorf("denied record %+v", r)
		}
		// Every attempt, denied and unknown ones too, records its arguments.
		if len(r.ArgsHMAC) != 64 || len(r.KeyID) != 16 || len(r.Args) == 0 {
			t.Errorf("record without arguments: %+v", r)
		}
	}
	if outcomes[host.OutcomeDenied] != len(denied) || outcomes[host.OutcomeOK] != 2 || outcomes[host.OutcomeUnknownTool] != 2 || outcomes[host.OutcomeBackendError] != 1 {
		t.Errorf("audit outcomes %v", outcomes)
	}
}

func TestValidationAndLimits(t *testing.T) {
	h, _ := policyHost(t, `
[host]
cache_dir = "@CACHE@"

[servers.fx]
command = "@FIXTURE@"
args = ["-extra"]
max_output = "1KiB"

[plugins.wasm]
path = "@PDKECHO@"
`, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		args any
		want []string
	}{
		{"fx__nested", `{"user":{"name":"Ada","age":"old"}}`, []string{"invalid arguments for fx__nested", "user.age", "want integer"}},
		{"fx__nested", `{"user":{"name":"Ada","age":36},"tags":["a",2]}`, []string{"tags[1]", "want string"}},
		{"fx__echo", `{}`, []string{"(arguments)", "missing property 'text'"}},
		{"wasm__echo", map[string]any{"text": 5}, []string{"invalid arguments for wasm__echo", "text", "want string"}},
	} {
		res, err := h.CallTool(ctx, tc.tool, tc.args)
		if err != nil || !res.IsError {
			t.Errorf("%s %v: got %v, %v; want an isError result", tc.tool, tc.args, res, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(text(t, res), w) {
				t.Errorf("%s %v: %q lacks %q", tc.tool, tc.args, text(t, res), w)
			}
		}
	}
	if res, err := h.CallTool(ctx, "fx__nested", `{"user":{"name":"Ada","age":36}}`); err != nil || text(t, res) != "Ada is 36" {
		t.Errorf("valid nested: %v %v", res, err)
	}
	for _, args := range []any{`[1]`, `"x"`, json.RawMessage(`{"a":`)} {
		if _, err := h.CallTool(ctx, "wasm__echo", args); !errors.Is(err, host.ErrInvalidArguments) {
			t.Errorf("args %s: %v, want ErrInvalidArguments", args, err)
		}
	}
	if _, err := h.CallTool(ctx, "fx__badout", nil); !errors.Is(err, host.ErrInvalidOutput) || !strings.Contains(err.Error(), "sum") {
		t.Errorf("badout: %v, want ErrInvalidOutput naming sum", err)
	}
	_, err := h.CallTool(ctx, "fx__big", map[string]any{"bytes": 5000})
	if !errors.Is(err, host.ErrOutputTooLarge) || !strings.Contains(err.Error(), "max_output") {
		t.Errorf("big: %v, want ErrOutputTooLarge", err)
	}
	// The connection stays usable.
	if res, err := h.CallTool(ctx, "fx__big", map[string]any{"bytes": 100}); err != nil || len(text(t, res)) != 100 {
		t.Errorf("after a too large result: %v %v", res, err)
	}
}

// startFixtureHTTP runs the fixture server over Streamable HTTP, with extra
// flags, and returns its URL.
func startFixtureHTTP(t *testing.T, extra ...string) string {
	cmd := exec.Command(testutil.Fixture(t), append([]string{"-http", "127.0.0.1:0"}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + strings.TrimSpace(line) + "/mcp"
}

func TestAudit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	var hooked []host.AuditRecord
	var mu sync.Mutex
	h, logs := policyHost(t, `
[host]
cache_dir = "@CACHE@"
audit_log = "`+path+`"
audit_redact = ["^pin$"]

[servers.fx]
command = "@FIXTURE@"
env = { TOKEN = "${SECRET_TOKEN}" }
timeout = "300ms"

[servers.remote]
url = "`+startFixtureHTTP(t)+`"
headers = { Authorization = "Bearer ${SECRET_TOKEN}" }

[plugins.echo]
path = "@ECHO@"
config = { echo_prefix = "${SECRET_TOKEN}" }

[policy]
deny = ["fx__fail"]
`, &host.Options{AuditKey: auditTestKey, Audit: func(r host.AuditRecord) { mu.Lock(); hooked = append(hooked, r); mu.Unlock() }})
	ctx := context.Background()
	lines := func() []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	args := map[string]any{"text": "carry " + secret, "Password": "hunter2", "pin": 1234,
		"opts": map[string]any{"apiKey": "k-1", "zeta": []any{1.5, true}, "alpha": nil}}
	res, err := h.CallTool(ctx, "echo__echo", args)
	if err != nil || res.IsError {
		t.Fatal(res, err)
	}
	// Written before the result is returned.
	if n := len(lines()); n != 1 {
		t.Fatalf("%d audit lines after the first call, want 1", n)
	}
	calls := []struct {
		tool    string
		args    any
		outcome string
	}{
		{"fx__echo", map[string]any{"text": "hi"}, host.OutcomeOK},
		{"remote__echo", map[string]any{"text": "x"}, host.OutcomeOK},
		{"echo__fail", nil, host.OutcomeToolError},
		{"echo__badjson", nil, host.OutcomeBackendError},
		{"fx__fail", nil, host.OutcomeDenied},
		{"remote__fail", nil, host.OutcomeToolError},
		{"fx__echo", map[string]any{"text": 3}, host.OutcomeInvalidArguments},
		{"fx__echo", `[1]`, host.OutcomeInvalidArguments},
		{"fx__nope", nil, host.OutcomeUnknownTool},
		{"fx__sleep", map[string]any{"ms": 5000}, host.OutcomeTimeout},
	}
	for _, c := range calls {
		h.CallTool(ctx, c.tool, c.args)
	}
	got := lines()
	if len(got) != 1+len(calls) {
		t.Fatalf("%d audit lines, want %d", len(got), 1+len(calls))
	}
	var first host.AuditRecord
	if err := json.Unmarshal([]byte(got[0]), &first); err != nil {
		t.Fatal(err)
	}
	canonical, _ := json.Marshal(args) // encoding/json sorts map keys
	mac := hmac.New(sha256.New, auditTestKey)
	mac.Write(canonical)
	if first.ArgsHMAC != hex.EncodeToString(mac.Sum(nil)) || first.KeyID != h.AuditKeyID() || len(first.KeyID) != 16 {
		t.Errorf("args_hmac %s key_id %s, want the HMAC-SHA-256 of %s under key %s", first.ArgsHMAC, first.KeyID, canonical, h.AuditKeyID())
	}
	wantArgs := `{"Password":"[REDACTED]","opts":{"alpha":null,"apiKey":"[REDACTED]","zeta":[1.5,true]},"pin":"[REDACTED]","text":"carry [REDACTED]"}`
	if string(first.Args) != wantArgs {
		t.Errorf("redacted args\n%s\nwant\n%s", first.Args, wantArgs)
	}
	if first.Tool != "echo__echo" || first.Backend != "echo" || first.Decision != "allow" || first.Rule != `policy.default "allow"` ||
		first.Outcome != host.OutcomeOK || first.ResultBytes == 0 || first.LatencyMS <= 0 || first.Time.IsZero() {
		t.Errorf("first record %+v", first)
	}
	for i, c := range calls {
		var r host.AuditRecord
		if err := json.Unmarshal([]byte(got[i+1]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Tool != c.tool || r.Outcome != c.outcome {
			t.Errorf("record %d: %s %s, want %s %s (%s)", i+1, r.Tool, r.Outcome, c.tool, c.outcome, got[i+1])
		}
	}
	mu.Lock()
	if len(hooked) != len(got) {
		t.Errorf("hook got %d records, file %d", len(hooked), len(got))
	}
	mu.Unlock()
	// No secret of env, headers or plugin config in any record or log line.
	for where, s := range map[string]string{"audit log": strings.Join(lines(), "\n"), "logs": logs.String()} {
		for _, bad := range []string{secret, "hunter2", "k-1"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", where, bad)
			}
		}
	}
	if h.AuditFailures() != 0 {
		t.Errorf("AuditFailures %d", h.AuditFailures())
	}
}

func TestAuditUnwritable(t *testing.T) {
	cfg, err := parsePolicy(t, `
[host]
audit_log = "no-such-dir/audit.jsonl"
[servers.fx]
command = "@FIXTURE@"
`)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := host.New(context.Background(), cfg, nil); !errors.Is(err, host.ErrAudit) || !strings.Contains(err.Error(), "audit_log") {
		if h != nil {
			h.Close()
		}
		t.Fatalf("New with an unwritable audit log: %v, want ErrAudit", err)
	}
	// A write that fails at run time does not fail the call: it is logged
	// and counted. /dev/full opens but every write fails.
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	h, logs := policyHost(t, `
[host]
audit_log = "/dev/full"
[servers.fx]
command = "@FIXTURE@"
`, nil)
	for range 3 {
		if res, err := h.CallTool(context.Background(), "fx__echo", map[string]any{"text": "still works"}); err != nil || text(t, res) != "still works" {
			t.Fatalf("call with a failing audit log: %v %v", res, err)
		}
	}
	if n := h.AuditFailures(); n != 3 {
		t.Errorf("AuditFailures %d, want 3", n)
	}
	if c := strings.Count(logs.String(), "AUDIT LOG WRITE FAILED"); c != 1 {
		t.Errorf("failure logged %d times, want once (rate-limited)", c)
	}
}

// TestCompileOnDemand: with Options.CompileOnDemand (toolhost call) a tool's
// schemas compile at its first call; a tool whose schema does not compile
// is then refused as an unlisted one (ErrUnknownTool, logged once), as it
// is left out of the catalogue without the option, and the rest are
// validated as before.
func TestCompileOnDemand(t *testing.T) {
	h, logs := policyHost(t, `
[host]
cache_dir = "@CACHE@"

[servers.fx]
command = "@FIXTURE@"
args = ["-extra"]
`, &host.Options{CompileOnDemand: true})
	ctx := context.Background()
	res, err := h.CallTool(ctx, "fx__echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	// Validation is on: the inputSchema compiled at the call.
	res, err = h.CallTool(ctx, "fx__echo", map[string]any{"text": 5})
	if err != nil || !res.IsError || res.Meta[host.MetaErrorKind] != host.KindInvalidArguments {
		t.Fatalf("echo with a number: %v %+v, want an invalid_arguments result", err, res)
	}
	// And so is the outputSchema's.
	if _, err := h.CallTool(ctx, "fx__badout", nil); !errors.Is(err, host.ErrInvalidOutput) {
		t.Errorf("badout: %v, want ErrInvalidOutput", err)
	}
	for range 2 {
		if _, err := h.CallTool(ctx, "fx__badschema", map[string]any{"x": 1}); !errors.Is(err, host.ErrUnknownTool) {
			t.Fatalf("badschema: %v, want ErrUnknownTool", err)
		}
	}
	if n := strings.Count(logs.String(), "tool dropped: its schema does not compile"); n != 1 {
		t.Errorf("the dropped tool is logged %d times, want once", n)
	}
}

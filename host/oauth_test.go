package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/oauthtest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// oauthHost starts a Host on one OAuth server, capturing every log line,
// audit record and event.
type oauthHost struct {
	h      *host.Host
	cfg    *config.Config
	logs   *testutil.Buffer
	mu     sync.Mutex
	audit  []host.AuditRecord
	events []host.Event
}

func newOAuthHost(t *testing.T, toml string, opts *host.Options) *oauthHost {
	t.Helper()
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "test.toml", LookupEnv: func(k string) (string, bool) {
		if k == "CLIENT_SECRET" {
			return "machine-secret-5678", true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	oh := &oauthHost{cfg: cfg, logs: &testutil.Buffer{}}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "host", Output: oh.logs, Level: hclog.Trace})
	opts.Audit = func(r host.AuditRecord) {
		oh.mu.Lock()
		defer oh.mu.Unlock()
		oh.audit = append(oh.audit, r)
	}
	opts.Events = func(e host.Event) {
		oh.mu.Lock()
		defer oh.mu.Unlock()
		oh.events = append(oh.events, e)
	}
	oh.h, err = host.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oh.h.Close() })
	return oh
}

// everything returns all the host said: logs, audit records, events,
// status as JSON and each status error.
func (oh *oauthHost) everything() string {
	oh.mu.Lock()
	defer oh.mu.Unlock()
	st, _ := json.Marshal(oh.h.Status())
	a, _ := json.Marshal(oh.audit)
	var ev []string
	for _, e := range oh.events {
		ev = append(ev, fmt.Sprintf("%+v %v", e, e.Err))
	}
	return oh.logs.String() + string(st) + string(a) + strings.Join(ev, "\n")
}

func TestOAuthNeedsLoginThenLogin(t *testing.T) {
	as := oauthtest.New(t, nil)
	store := &transport.MemoryTokenStore{}
	oh := newOAuthHost(t, fmt.Sprintf("[servers.remote]\nurl = %q\n[servers.remote.oauth]\n", as.MCPURL), &host.Options{TokenStore: store})
	st := statusOf(oh.h, "remote")
	if st.State != host.StateNeedsLogin || !errors.Is(st.Err, transport.ErrNeedsLogin) || !strings.Contains(st.LastError, `server "remote"`) || strings.Contains(st.LastError, "toolhost ") {
		t.Fatalf("status = %s %q; want needs_login naming the server and no CLI command (the CLI adds that)", st.State, st.LastError)
	}
	if !st.NextRestart.IsZero() || st.Restarts != 0 {
		t.Errorf("a backend that needs a login is scheduled for restart: %+v", st)
	}
	ctx := context.Background()
	_, err := oh.h.CallTool(ctx, "remote__echo", map[string]any{"text": "x"})
	if !errors.Is(err, host.ErrBackendUnavailable) || !errors.Is(err, transport.ErrNeedsLogin) {
		t.Fatalf("call = %v; want ErrBackendUnavailable wrapping ErrNeedsLogin", err)
	}

	// What `toolhost login` does: an interactive OAuth on the same store.
	oa, err := host.NewOAuth(oh.cfg, "remote", &host.OAuthConfig{Store: store, Authorize: func(ctx context.Context, _ string, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return oauthtest.Fetch(ctx, a)
	}})
	if err != nil {
		t.Fatal(err)
	}
	tr := transport.NewHTTP(as.MCPURL, &transport.HTTPOptions{OAuth: oa})
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if err := oh.h.Restart(ctx, "remote"); err != nil {
		t.Fatalf("restart after login: %v", err)
	}
	res, err := oh.h.CallTool(ctx, "remote__echo", map[string]any{"text": "after login"})
	if err != nil || res.IsError {
		t.Fatalf("call after login: %v %+v", err, res)
	}

	// The server stops taking the token (and its refresh token): the
	// call fails and the backend is needs_login again, not restarting.
	as.RevokeAll()
	if _, err := oh.h.CallTool(ctx, "remote__echo", map[string]any{"text": "x"}); !errors.Is(err, transport.ErrNeedsLogin) {
		t.Fatalf("call with a revoked token = %v; want ErrNeedsLogin", err)
	}
	waitOAuthState(t, oh.h, "remote", host.StateNeedsLogin)

	// A second login, then a restart: the new token is used.
	tr = transport.NewHTTP(as.MCPURL, &transport.HTTPOptions{OAuth: oa})
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if err := oh.h.Restart(ctx, "remote"); err != nil {
		t.Fatalf("restart after the second login: %v", err)
	}
	if res, err := oh.h.CallTool(ctx, "remote__echo", map[string]any{"text": "again"}); err != nil || res.IsError {
		t.Fatalf("call after the second login: %v %+v", err, res)
	}
	for _, s := range as.Secrets() {
		if strings.Contains(oh.everything(), s) {
			t.Errorf("secret %.6s... in logs, audit, events or status", s)
		}
	}
}

// waitState waits (on the host's events, no sleeping) until backend name
// is in state want.
func waitOAuthState(t *testing.T, h *host.Host, name string, want host.State) {
	t.Helper()
	ch := make(chan struct{}, 1)
	unsub := h.Subscribe(func(e host.Event) {
		if e.Backend == name && e.State == want {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	defer unsub()
	if statusOf(h, name).State == want {
		return
	}
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s is %s; want %s", name, statusOf(h, name).State, want)
	}
}

func TestOAuthHeadlessAuthorizeAndClientCredentials(t *testing.T) {
	as := oauthtest.New(t, &oauthtest.Options{ClientID: "machine", ClientSecret: "machine-secret-5678"})
	toml := fmt.Sprintf(`
[servers.person]
url = %q
oauth = { scopes = ["read"] }

[servers.machine]
url = %q
oauth = { grant = "client_credentials", client_id = "machine", client_secret = "${CLIENT_SECRET}" }
`, as.MCPURL, as.MCPURL)
	var asked []string
	var mu sync.Mutex
	oh := newOAuthHost(t, toml, &host.Options{TokenStore: &transport.MemoryTokenStore{}, Authorize: func(ctx context.Context, server string, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		mu.Lock()
		asked = append(asked, server)
		mu.Unlock()
		return oauthtest.Fetch(ctx, a)
	}})
	ctx := context.Background()
	for _, name := range []string{"person__echo", "machine__echo"} {
		res, err := oh.h.CallTool(ctx, name, map[string]any{"text": "hi"})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	mu.Lock()
	if len(asked) != 1 || asked[0] != "person" {
		t.Errorf("Authorize was asked for %v; want [person]", asked)
	}
	mu.Unlock()
	if as.Count("client_credentials") != 1 {
		t.Errorf("client_credentials grants: %d", as.Count("client_credentials"))
	}
	out := oh.everything()
	for _, s := range as.Secrets() {
		if strings.Contains(out, s) {
			t.Errorf("secret %.6s... in logs, audit, events or status", s)
		}
	}
}

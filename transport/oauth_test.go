package transport_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/toolhost/toolhost/internal/oauthtest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// oauthRig builds OAuth clients and transports for one fixture server,
// logging everything at trace level into logs.
type oauthRig struct {
	t    *testing.T
	as   *oauthtest.Server
	logs *testutil.Buffer
	dir  string
}

func newOAuthRig(t *testing.T, opts *oauthtest.Options) *oauthRig {
	return &oauthRig{t: t, as: oauthtest.New(t, opts), logs: &testutil.Buffer{}, dir: filepath.Join(t.TempDir(), "tokens")}
}

func (r *oauthRig) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "oauth", Output: r.logs, Level: hclog.Trace})
}

func (r *oauthRig) oauth(o transport.OAuthOptions) *transport.OAuth {
	r.t.Helper()
	if o.Server == "" {
		o.Server = "remote"
	}
	if o.Store == nil {
		o.Store = &transport.FileTokenStore{Dir: r.dir}
	}
	o.Logger = r.logger()
	oa, err := transport.NewOAuth(r.as.MCPURL, &o)
	if err != nil {
		r.t.Fatal(err)
	}
	return oa
}

// connect connects a new HTTP transport with oa and checks that the echo
// tool answers; it returns Connect's or the call's error.
func (r *oauthRig) connect(oa *transport.OAuth) error {
	r.t.Helper()
	h := transport.NewHTTP(r.as.MCPURL, &transport.HTTPOptions{OAuth: oa, Logger: r.logger()})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.Connect(ctx); err != nil {
		return err
	}
	return r.echo(ctx, h)
}

func (r *oauthRig) echo(ctx context.Context, h *transport.HTTP) error {
	res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		return err
	}
	if res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		r.t.Fatalf("echo: %+v", res)
	}
	return nil
}

func TestOAuthCodeFlowPKCEDynamicRegistration(t *testing.T) {
	r := newOAuthRig(t, nil)
	var urls []string
	fetch := func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		urls = append(urls, a.URL)
		return oauthtest.Fetch(ctx, a)
	}
	if err := r.connect(r.oauth(transport.OAuthOptions{Authorize: fetch})); err != nil {
		t.Fatal(err)
	}
	if r.as.Count("register") != 1 || r.as.Count("authorize") != 1 || r.as.Count("authorization_code") != 1 || len(urls) != 1 {
		t.Fatalf("register %d, authorize %d, code grants %d, fetches %d; want 1 each", r.as.Count("register"), r.as.Count("authorize"), r.as.Count("authorization_code"), len(urls))
	}
	q := r.as.LastAuthorize()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != r.as.MCPURL {
		t.Errorf("authorization request: %v", q)
	}

	// The token file: mode 0600 in a 0700 directory, for this URL only.
	store := &transport.FileTokenStore{Dir: r.dir}
	key := transport.TokenKey{Server: "remote", URL: r.as.MCPURL}
	path, _ := store.Path(key)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(r.dir); di.Mode().Perm() != 0o700 {
		t.Errorf("token dir mode %v, want 0700", di.Mode().Perm())
	}
	if st, err := store.Load(context.Background(), transport.TokenKey{Server: "remote", URL: r.as.URL + "/other"}); st != nil || err != nil {
		t.Errorf("a token for another URL was returned: %v %v", st != nil, err)
	}

	// A later run, not interactive, uses the stored token: no new login.
	if err := r.connect(r.oauth(transport.OAuthOptions{})); err != nil {
		t.Fatalf("with the stored token: %v", err)
	}
	if r.as.Count("authorize") != 1 {
		t.Errorf("authorize ran %d times; the stored token was not used", r.as.Count("authorize"))
	}
}

func TestOAuthPreregisteredClientCodeFlow(t *testing.T) {
	r := newOAuthRig(t, &oauthtest.Options{ClientID: "toolhost-cli", ClientSecret: "cli-secret-1234"})
	oa := r.oauth(transport.OAuthOptions{ClientID: "toolhost-cli", ClientSecret: "cli-secret-1234", Scopes: []string{"read"}, Authorize: oauthtest.Fetch})
	if err := r.connect(oa); err != nil {
		t.Fatal(err)
	}
	if r.as.Count("register") != 0 {
		t.Error("a pre-registered client registered dynamically")
	}
	// (offline_access is added for a refresh token: the server supports it.)
	if got := strings.Fields(r.as.LastAuthorize().Get("scope")); !contains(got, "read") || contains(got, "write") {
		t.Errorf("scope %q, want the configured \"read\" only", got)
	}
	data, err := os.ReadFile(mustPath(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "cli-secret-1234") {
		t.Error("the configured client secret was written to the token file")
	}
}

func mustPath(t *testing.T, r *oauthRig) string {
	p, err := (&transport.FileTokenStore{Dir: r.dir}).Path(transport.TokenKey{Server: "remote", URL: r.as.MCPURL})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOAuthNeedsLogin(t *testing.T) {
	r := newOAuthRig(t, nil)
	err := r.connect(r.oauth(transport.OAuthOptions{}))
	if !errors.Is(err, transport.ErrNeedsLogin) || errors.Is(err, transport.ErrInitialize) {
		t.Fatalf("Connect without a token = %v; want ErrNeedsLogin (and not ErrInitialize)", err)
	}
	t.Log(err)
	if msg := err.Error(); !strings.Contains(msg, `server "remote": store a token`) || strings.Contains(msg, "toolhost ") {
		t.Errorf("error does not say what to do, or names a CLI command: %v", err)
	}
	// A refresh token the server no longer accepts is a login too.
	if err := r.connect(r.oauth(transport.OAuthOptions{Authorize: oauthtest.Fetch})); err != nil {
		t.Fatal(err)
	}
	r.as.RevokeAll()
	if err := r.connect(r.oauth(transport.OAuthOptions{})); !errors.Is(err, transport.ErrNeedsLogin) {
		t.Fatalf("with a revoked token: %v; want ErrNeedsLogin", err)
	}
}

func TestOAuthRefresh(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		// Tokens of 5s are expired for oauth2 at once (its expiry margin
		// is 10s): every request refreshes first, with no login.
		r := newOAuthRig(t, &oauthtest.Options{ExpiresIn: 5})
		if err := r.connect(r.oauth(transport.OAuthOptions{Authorize: oauthtest.Fetch})); err != nil {
			t.Fatal(err)
		}
		before := r.as.Count("refresh_token")
		if err := r.connect(r.oauth(transport.OAuthOptions{})); err != nil {
			t.Fatal(err)
		}
		if r.as.Count("refresh_token") <= before || r.as.Count("authorize") != 1 {
			t.Fatalf("refreshes %d (before %d), authorizations %d", r.as.Count("refresh_token"), before, r.as.Count("authorize"))
		}
		// The rotated refresh token was saved: a third run still works.
		if err := r.connect(r.oauth(transport.OAuthOptions{})); err != nil {
			t.Fatalf("after rotation: %v", err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		r := newOAuthRig(t, nil)
		if err := r.connect(r.oauth(transport.OAuthOptions{Authorize: oauthtest.Fetch})); err != nil {
			t.Fatal(err)
		}
		oa := r.oauth(transport.OAuthOptions{})
		h := transport.NewHTTP(r.as.MCPURL, &transport.HTTPOptions{OAuth: oa})
		defer h.Close()
		ctx := context.Background()
		if _, err := h.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		r.as.Revoke() // the server drops the access token before its expiry
		if err := r.echo(ctx, h); err != nil {
			t.Fatalf("call after the access token was revoked: %v", err)
		}
		if r.as.Count("refresh_token") != 1 || r.as.Count("authorize") != 1 {
			t.Errorf("refreshes %d, authorizations %d; want 1, 1", r.as.Count("refresh_token"), r.as.Count("authorize"))
		}
	})
}

func TestOAuthStepUp(t *testing.T) {
	r := newOAuthRig(t, &oauthtest.Options{Scopes: []string{"read"}})
	oa := r.oauth(transport.OAuthOptions{Authorize: oauthtest.Fetch})
	h := transport.NewHTTP(r.as.MCPURL, &transport.HTTPOptions{OAuth: oa})
	defer h.Close()
	ctx := context.Background()
	if _, err := h.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	r.as.Require("read", "write")
	if err := r.echo(ctx, h); err != nil {
		t.Fatalf("call needing a step-up: %v", err)
	}
	if r.as.Count("403") != 1 || r.as.Count("authorize") != 2 {
		t.Errorf("403s %d, authorizations %d; want 1, 2", r.as.Count("403"), r.as.Count("authorize"))
	}
	if got := strings.Fields(r.as.LastAuthorize().Get("scope")); !contains(got, "read") || !contains(got, "write") {
		t.Errorf("step-up requested %v; want read and write", got)
	}

	// Not interactive: a step-up is a login.
	r.as.Require("read", "write", "admin")
	oa2 := r.oauth(transport.OAuthOptions{})
	err := r.connect(oa2)
	if !errors.Is(err, transport.ErrNeedsLogin) || !strings.Contains(err.Error(), "scope") {
		t.Fatalf("step-up without Authorize: %v; want ErrNeedsLogin naming the scope", err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestOAuthClientCredentials(t *testing.T) {
	r := newOAuthRig(t, &oauthtest.Options{ClientID: "machine", ClientSecret: "machine-secret-5678"})
	oa := r.oauth(transport.OAuthOptions{Grant: transport.GrantClientCredentials, ClientID: "machine", ClientSecret: "machine-secret-5678", Scopes: []string{"read"}})
	h := transport.NewHTTP(r.as.MCPURL, &transport.HTTPOptions{OAuth: oa})
	defer h.Close()
	ctx := context.Background()
	if _, err := h.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.echo(ctx, h); err != nil {
		t.Fatal(err)
	}
	if r.as.Count("client_credentials") != 1 || r.as.Count("authorize") != 0 {
		t.Fatalf("client_credentials %d, authorize %d", r.as.Count("client_credentials"), r.as.Count("authorize"))
	}
	r.as.Revoke()
	if err := r.echo(ctx, h); err != nil {
		t.Fatalf("after the token was revoked: %v", err)
	}
	if r.as.Count("client_credentials") != 2 {
		t.Errorf("client_credentials %d, want 2 (a new token after the 401)", r.as.Count("client_credentials"))
	}
	if entries, _ := os.ReadDir(r.dir); len(entries) != 0 {
		t.Errorf("client credentials tokens were stored: %v", entries)
	}

	// A wrong secret is ErrAuthorization, and the secret is not in the error.
	bad := r.oauth(transport.OAuthOptions{Grant: transport.GrantClientCredentials, ClientID: "machine", ClientSecret: "wrong-secret-9999"})
	err := r.connect(bad)
	if !errors.Is(err, transport.ErrAuthorization) || strings.Contains(err.Error(), "wrong-secret-9999") {
		t.Fatalf("wrong secret: %v; want ErrAuthorization without the secret", err)
	}
}

// TestOAuthSecretsNeverLeak drives every flow with trace logging and checks
// that no token, code, verifier or client secret appears in the logs or in
// any error text.
func TestOAuthSecretsNeverLeak(t *testing.T) {
	r := newOAuthRig(t, &oauthtest.Options{ClientID: "machine", ClientSecret: "machine-secret-5678", ExpiresIn: 5, Scopes: []string{"read"}})
	var errs []string
	note := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	note(r.connect(r.oauth(transport.OAuthOptions{Authorize: oauthtest.Fetch})))                                                                        // code flow (DCR)
	note(r.connect(r.oauth(transport.OAuthOptions{})))                                                                                                  // stored token, refreshed
	note(r.connect(r.oauth(transport.OAuthOptions{Grant: transport.GrantClientCredentials, ClientID: "machine", ClientSecret: "machine-secret-5678"}))) // machine
	r.as.Require("read", "write")
	note(r.connect(r.oauth(transport.OAuthOptions{})))                                                                                                // needs login (step-up)
	note(r.connect(r.oauth(transport.OAuthOptions{Grant: transport.GrantClientCredentials, ClientID: "machine", ClientSecret: "wrong-secret-9999"}))) // refused
	if len(errs) != 2 {
		t.Fatalf("want exactly the two expected failures, got %q", errs)
	}
	out := r.logs.String() + strings.Join(errs, "\n")
	if !strings.Contains(out, "oauth") {
		t.Fatal("nothing was logged; the test proves nothing")
	}
	secrets := append(r.as.Secrets(), "wrong-secret-9999")
	if len(secrets) < 6 {
		t.Fatalf("only %d secrets issued", len(secrets))
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("secret %.6s... leaked into logs or errors", s)
		}
	}
}

func TestFileTokenStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "tokens")
	s := &transport.FileTokenStore{Dir: dir}
	ctx := context.Background()
	k1 := transport.TokenKey{Server: "remote", URL: "https://one.example/mcp"}
	k2 := transport.TokenKey{Server: "remote", URL: "https://two.example/mcp"}
	if st, err := s.Load(ctx, k1); st != nil || err != nil {
		t.Fatalf("empty store: %v %v", st, err)
	}
	tok := &transport.StoredToken{URL: k1.URL, ClientID: "c"}
	tok.Token = newToken("at-1")
	if err := s.Save(ctx, k1, tok); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Load(ctx, k2); st != nil {
		t.Fatal("the token of one URL was returned for another")
	}
	// A file whose URL does not match its key is not used either.
	p1, _ := s.Path(k1)
	p2, _ := s.Path(k2)
	data, _ := os.ReadFile(p1)
	if err := os.WriteFile(p2, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Load(ctx, k2); st != nil {
		t.Fatal("a copied token file was used for another URL")
	}
	tok.Token = newToken("at-2")
	if err := s.Save(ctx, k1, tok); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load(ctx, k1)
	if err != nil || st.Token.AccessToken != "at-2" {
		t.Fatalf("reload: %v %v", st, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 { // p1 and the copy: no temporary files left
		t.Errorf("files in the store: %v", entries)
	}
	if err := os.WriteFile(p1, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, k1); err == nil || strings.Contains(err.Error(), "not json") {
		t.Errorf("corrupt file: %v", err)
	}
	if err := s.Delete(ctx, k1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, k1); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func newToken(at string) *oauth2.Token { return &oauth2.Token{AccessToken: at, TokenType: "Bearer"} }

// FuzzTokenFile: whatever a token file holds, Load neither panics nor
// returns a token for another URL, and its error never quotes the file.
func FuzzTokenFile(f *testing.F) {
	f.Add([]byte(`{"url":"https://a.example/mcp","token":{"access_token":"x"}}`))
	f.Add([]byte(`{"url":"https://b.example/mcp","token":{"access_token":"x"}}`))
	f.Add([]byte(`{"url":"https://a.example/mcp","token":null}`))
	f.Add([]byte("not json at all"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &transport.FileTokenStore{Dir: dir}
		key := transport.TokenKey{Server: "a", URL: "https://a.example/mcp"}
		p, _ := s.Path(key)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := s.Load(context.Background(), key)
		if err != nil {
			if len(data) > 8 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("error quotes the file: %v", err)
			}
			return
		}
		if st != nil && (st.URL != key.URL || st.Token == nil) {
			t.Fatalf("Load returned %+v", st)
		}
	})
}

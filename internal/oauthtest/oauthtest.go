// Package oauthtest is a small, real OAuth 2.1 authorization server and a
// protected MCP server on loopback, for tests of toolhost's OAuth client.
//
// One httptest server serves both:
//   - the MCP endpoint /mcp (a go-sdk server with an "echo" tool) behind a
//     bearer-token check: 401 with a WWW-Authenticate challenge naming the
//     protected-resource metadata (RFC 9728) when the token is missing,
//     unknown or expired; 403 error="insufficient_scope" when it lacks a
//     required scope (MCP 2025-11-25, basic/authorization, step-up);
//   - /.well-known/oauth-protected-resource[/mcp] and
//     /.well-known/oauth-authorization-server (RFC 8414) metadata;
//   - /authorize (authorization-code, PKCE S256 required), /token
//     (authorization_code with code_verifier check, refresh_token with
//     rotation, client_credentials) and /register (RFC 7591).
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures a Server. Nil is valid.
type Options struct {
	// ClientID and ClientSecret are a pre-registered confidential client
	// (it may use client_credentials). Empty: none.
	ClientID, ClientSecret string
	// Scopes are the scopes required from the start (the 401 challenge
	// names them). Require changes them later.
	Scopes []string
	// ExpiresIn is the access tokens' lifetime in seconds (default 3600).
	// Below 10, the go-sdk's oauth2 takes a token as expired at once, so
	// each request refreshes it.
	ExpiresIn int
	// NoRefresh: the authorization-code grant issues no refresh token.
	NoRefresh bool
}

type grant struct {
	client, redirect, challenge, resource string
	scopes                                []string
}

type token struct {
	client  string
	scopes  []string
	expires time.Time
}

// Server is the authorization server and protected MCP server.
type Server struct {
	// URL is the origin of both (the issuer): http://127.0.0.1:PORT.
	URL string
	// MCPURL is the MCP endpoint, URL + "/mcp".
	MCPURL string

	opts Options
	srv  *httptest.Server
	mcp  *mcp.Server // behind /mcp

	mu       sync.Mutex
	clients  map[string]client
	codes    map[string]grant
	access   map[string]token
	refresh  map[string]token
	require  []string
	counts   map[string]int
	secrets  []string
	lastAuth url.Values
}

type client struct {
	secret    string
	redirects []string
}

// New starts a Server; it is closed when t ends (t may be nil, as in an
// example: then call Close).
func New(t testing.TB, opts *Options) *Server {
	s := &Server{clients: map[string]client{}, codes: map[string]grant{}, access: map[string]token{},
		refresh: map[string]token{}, counts: map[string]int{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.ExpiresIn == 0 {
		s.opts.ExpiresIn = 3600
	}
	s.require = slices.Clone(s.opts.Scopes)
	if s.opts.ClientID != "" {
		s.clients[s.opts.ClientID] = client{secret: s.opts.ClientSecret}
		s.secrets = append(s.secrets, s.opts.ClientSecret)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "oauth-protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	s.mcp = srv
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.protect(mcpHandler))
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", s.resourceMeta)
	mux.HandleFunc("/.well-known/oauth-protected-resource", s.resourceMeta)
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.serverMeta)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	mux.HandleFunc("/register", s.register)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	s.MCPURL = s.URL + "/mcp"
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// Close stops the server (idempotent).
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	// A session its client left without DELETE lives until closed.
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
}

// Require sets the scopes every MCP request needs from now on.
func (s *Server) Require(scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.require = scopes
}

// Revoke makes every access token issued so far invalid (refresh tokens
// stay valid), as a server that expired them early would.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// RevokeAll makes every access and refresh token invalid.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

// Count returns how often kind happened: a grant type at /token
// ("authorization_code", "refresh_token", "client_credentials"),
// "authorize", "register", "401" or "403".
func (s *Server) Count(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[kind]
}

// Secrets returns every secret the server issued or knows: access and
// refresh tokens, authorization codes, client secrets, PKCE verifiers.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.secrets)
}

// LastAuthorize returns the query of the last /authorize request.
func (s *Server) LastAuthorize() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAuth
}

func (s *Server) newSecret(prefix string) string {
	v := prefix + "-" + rand.Text()
	s.secrets = append(s.secrets, v)
	return v
}

func (s *Server) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		meta := fmt.Sprintf("resource_metadata=%q", s.URL+"/.well-known/oauth-protected-resource/mcp")
		scope := ""
		if len(s.require) > 0 {
			scope = fmt.Sprintf(", scope=%q", strings.Join(s.require, " "))
		}
		tok, ok := s.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if ok && time.Now().After(tok.expires) {
			ok = false
		}
		if !ok {
			s.counts["401"]++
			s.mu.Unlock()
			w.Header().Set("WWW-Authenticate", "Bearer "+meta+scope)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		for _, need := range s.require {
			if !slices.Contains(tok.scopes, need) {
				s.counts["403"]++
				s.mu.Unlock()
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", `+meta+scope)
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) resourceMeta(w http.ResponseWriter, r *http.Request) {
	resource := s.MCPURL
	if r.URL.Path == "/.well-known/oauth-protected-resource" {
		resource = s.URL
	}
	writeJSON(w, 200, map[string]any{"resource": resource, "authorization_servers": []string{s.URL},
		"scopes_supported": []string{"read", "write", "offline_access"}})
}

func (s *Server) serverMeta(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer":                                         s.URL,
		"authorization_endpoint":                         s.URL + "/authorize",
		"token_endpoint":                                 s.URL + "/token",
		"registration_endpoint":                          s.URL + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                               []string{"read", "write", "offline_access"},
		"authorization_response_iss_parameter_supported": true,
	})
}

func oauthError(w http.ResponseWriter, code int, e, desc string) {
	writeJSON(w, code, map[string]string{"error": e, "error_description": desc})
}

// authorize approves at once (no login page) and redirects with the code.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts["authorize"]++
	s.lastAuth = q
	c, ok := s.clients[q.Get("client_id")]
	switch {
	case !ok:
		oauthError(w, 400, "invalid_client", "unknown client_id")
		return
	case q.Get("response_type") != "code":
		oauthError(w, 400, "unsupported_response_type", "code only")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		oauthError(w, 400, "invalid_request", "PKCE with S256 is required")
		return
	case len(c.redirects) > 0 && !slices.Contains(c.redirects, q.Get("redirect_uri")):
		oauthError(w, 400, "invalid_request", "redirect_uri not registered")
		return
	case q.Get("resource") != s.MCPURL:
		oauthError(w, 400, "invalid_target", "resource must be the MCP server")
		return
	}
	code := s.newSecret("code")
	s.codes[code] = grant{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
	u, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		oauthError(w, 400, "invalid_request", "bad redirect_uri")
		return
	}
	rq := u.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	rq.Set("iss", s.URL)
	u.RawQuery = rq.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request", "bad form")
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	} else {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gt := r.PostForm.Get("grant_type")
	s.counts[gt]++
	c, ok := s.clients[id]
	if !ok || c.secret != secret {
		oauthError(w, 401, "invalid_client", "client authentication failed")
		return
	}
	var scopes []string
	refresh := !s.opts.NoRefresh
	switch gt {
	case "authorization_code":
		g, ok := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		verifier := r.PostForm.Get("code_verifier")
		sum := sha256.Sum256([]byte(verifier))
		switch {
		case !ok || g.client != id || g.redirect != r.PostForm.Get("redirect_uri"):
			oauthError(w, 400, "invalid_grant", "unknown code")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			oauthError(w, 400, "invalid_grant", "PKCE verification failed")
			return
		}
		s.secrets = append(s.secrets, verifier)
		scopes = g.scopes
	case "refresh_token":
		t, ok := s.refresh[r.PostForm.Get("refresh_token")]
		delete(s.refresh, r.PostForm.Get("refresh_token"))
		if !ok || t.client != id {
			oauthError(w, 400, "invalid_grant", "unknown refresh token")
			return
		}
		scopes = t.scopes
	case "client_credentials":
		if c.secret == "" {
			oauthError(w, 400, "unauthorized_client", "public clients cannot use client_credentials")
			return
		}
		scopes, refresh = strings.Fields(r.PostForm.Get("scope")), false
	default:
		oauthError(w, 400, "unsupported_grant_type", gt)
		return
	}
	at := s.newSecret("at")
	s.access[at] = token{client: id, scopes: scopes, expires: time.Now().Add(time.Duration(s.opts.ExpiresIn) * time.Second)}
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": s.opts.ExpiresIn, "scope": strings.Join(scopes, " ")}
	if refresh {
		rt := s.newSecret("rt")
		s.refresh[rt] = token{client: id, scopes: scopes}
		resp["refresh_token"] = rt
	}
	writeJSON(w, 200, resp)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		oauthError(w, 400, "invalid_client_metadata", "redirect_uris required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts["register"]++
	id := "dyn-" + rand.Text()
	s.clients[id] = client{redirects: md.RedirectURIs}
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs, "client_name": md.ClientName,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}})
}

// Fetch is a headless auth.AuthorizationCodeFetcher: it requests the
// authorization URL (which this server approves at once) and reads code,
// state and iss from the redirect, without following it.
func Fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("authorize: status %d", resp.StatusCode)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

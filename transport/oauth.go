package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth errors. An HTTP transport's Connect (and any operation, when the
// server stops accepting its token) returns one of them, instead of
// ErrInitialize, when the server wants an OAuth access token it cannot get.
var (
	// ErrNeedsLogin: the server answered 401 (or 403 insufficient_scope)
	// and there is no usable token: none stored, or refused and not
	// refreshable, and the authorization-code grant needs a person while
	// no OAuthOptions.Authorize was given. Run `toolhost login NAME`. The
	// host shows such a backend as needs_login and does not restart it.
	ErrNeedsLogin = errors.New("server needs an OAuth login")

	// ErrAuthorization: an OAuth flow was tried and failed (discovery of
	// the protected-resource or authorization-server metadata, client
	// registration, the authorization request, or the token endpoint
	// refused). The message says which step; it never contains a token or
	// a client secret.
	ErrAuthorization = errors.New("OAuth authorization failed")
)

// OAuthGrant is how a client obtains its access token (OAuth 2.1 draft,
// section 4).
type OAuthGrant string

// The grants supported.
const (
	// GrantAuthorizationCode: a person authorizes the client in a browser
	// (with PKCE, S256); the token is refreshed with its refresh token.
	GrantAuthorizationCode OAuthGrant = "authorization_code"
	// GrantClientCredentials: a machine authenticates with its client_id
	// and client_secret; no person, no refresh token, nothing stored.
	GrantClientCredentials OAuthGrant = "client_credentials"
)

// OAuthOptions configures OAuth 2.1 authorization for an HTTP server (MCP
// 2025-11-25, basic/authorization). Nil HTTPOptions.OAuth: none.
type OAuthOptions struct {
	// Server is the backend's name: with the URL, it keys the stored token.
	Server string

	// Grant is GrantAuthorizationCode (the default) or
	// GrantClientCredentials.
	Grant OAuthGrant

	// ClientID and ClientSecret are a pre-registered client. With no
	// ClientID, the authorization-code grant registers a client
	// dynamically (RFC 7591) at the authorization server's
	// registration_endpoint (or uses ClientMetadataURL). The client
	// credentials grant needs both.
	ClientID     string
	ClientSecret string

	// Scopes are the scopes to request. Empty: those the server's
	// WWW-Authenticate challenge names, else its protected-resource
	// metadata's scopes_supported. A step-up (403 insufficient_scope) adds
	// the challenged scopes to those granted.
	Scopes []string

	// ClientName is the client_name sent with dynamic client registration.
	// Default "toolhost".
	ClientName string

	// ClientMetadataURL is an HTTPS URL with a path where the client's
	// metadata document is published (a Client ID Metadata Document, MCP
	// 2025-11-25, basic/authorization); used as client_id when the
	// authorization server supports it. Optional.
	ClientMetadataURL string

	// RedirectURL is where the authorization server sends the browser back
	// with the code: the loopback listener of `toolhost login`. Default
	// "http://127.0.0.1/callback" (what Authorize does with it is up to
	// Authorize).
	RedirectURL string

	// Authorize runs the browser part of the authorization-code grant: it
	// gets the authorization URL (to open in a browser, or to fetch, for a
	// headless client) and returns the code, state and iss of the redirect.
	// Nil (the default, and what `toolhost run`/`serve` use): the grant
	// is not interactive, and a server that needs a new authorization
	// fails with ErrNeedsLogin.
	Authorize auth.AuthorizationCodeFetcher

	// Store keeps the token between runs (authorization-code grant only).
	// Nil: tokens live in memory only.
	Store TokenStore

	// Client makes the requests to the authorization server and the
	// metadata endpoints. Default: a client of its own. The server's
	// configured headers are never sent there.
	Client *http.Client

	// Logger receives the flow's diagnostics (never a token or a secret).
	// Default: a null logger.
	Logger hclog.Logger
}

// OAuth is the OAuth 2.1 client of one HTTP server: it implements the
// go-sdk's auth.OAuthHandler on top of auth.AuthorizationCodeHandler and the
// client credentials grant, and adds what they leave out: the token is
// loaded from and saved to a TokenStore, refreshed with its refresh token
// when the server refuses it, and a non-interactive client fails with
// ErrNeedsLogin rather than starting a flow nobody can finish. One OAuth
// serves every session (and reconnection) of one backend; it is safe for
// concurrent use, and runs one flow at a time.
type OAuth struct {
	url    string
	opts   OAuthOptions
	key    TokenKey
	client *http.Client
	logger hclog.Logger
	code   *auth.AuthorizationCodeHandler // authorization-code grant

	flow   sync.Mutex // one Authorize at a time
	stepUp bool       // the flow in progress answers a 403 (flow held)

	mu  sync.Mutex
	src *savingSource // nil: no token
	// granted are the client credentials grant's scopes so far.
	granted []string
}

var _ auth.OAuthHandler = (*OAuth)(nil)

// NewOAuth returns the OAuth client for the MCP server at serverURL. Errors:
// an options combination that cannot work (client credentials without a
// client_id and client_secret, a ClientMetadataURL that is not HTTPS).
func NewOAuth(serverURL string, opts *OAuthOptions) (*OAuth, error) {
	o := &OAuth{url: serverURL}
	if opts != nil {
		o.opts = *opts
	}
	if o.opts.Grant == "" {
		o.opts.Grant = GrantAuthorizationCode
	}
	if o.opts.ClientName == "" {
		o.opts.ClientName = "toolhost"
	}
	if o.opts.RedirectURL == "" {
		o.opts.RedirectURL = "http://127.0.0.1/callback"
	}
	o.logger = o.opts.Logger
	if o.logger == nil {
		o.logger = hclog.NewNullLogger()
	}
	o.client = o.opts.Client
	if o.client == nil {
		// Token refreshes run outside any call's context: bound them.
		o.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 30 * time.Second}
	}
	o.key = TokenKey{Server: o.opts.Server, URL: serverURL}
	switch o.opts.Grant {
	case GrantClientCredentials:
		if o.opts.ClientID == "" || o.opts.ClientSecret == "" {
			return nil, errors.New("oauth: the client_credentials grant needs client_id and client_secret")
		}
	case GrantAuthorizationCode:
		cfg := &auth.AuthorizationCodeHandlerConfig{
			RedirectURL:              o.opts.RedirectURL,
			AuthorizationCodeFetcher: o.fetch,
			ScopeFilter:              o.scopes,
			RequestRefreshToken:      true,
			Client:                   o.client,
			NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
				return o.adopt(cfg, tok), nil
			},
		}
		if o.opts.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.opts.ClientMetadataURL}
		}
		if o.opts.ClientID != "" {
			cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.opts.ClientID}
			if o.opts.ClientSecret != "" {
				cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.opts.ClientSecret}
			}
		} else {
			cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{o.opts.RedirectURL},
				ClientName:              o.opts.ClientName,
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			}}
		}
		h, err := auth.NewAuthorizationCodeHandler(cfg)
		if err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
		o.code = h
	default:
		return nil, fmt.Errorf("oauth: unknown grant %q: use %q or %q", o.opts.Grant, GrantAuthorizationCode, GrantClientCredentials)
	}
	return o, nil
}

// Key returns the key of the server's token in the store.
func (o *OAuth) Key() TokenKey { return o.key }

// Load adopts the stored token, if the store has one newer than the token
// in use (a `toolhost login` may have run since). HTTP calls it before
// every initialize. A store that fails is logged and taken for empty.
func (o *OAuth) Load(ctx context.Context) {
	if o.opts.Store == nil || o.opts.Grant != GrantAuthorizationCode {
		return
	}
	st, err := o.opts.Store.Load(ctx, o.key)
	if err != nil {
		o.logger.Warn("oauth: cannot read the stored token; ignoring it", "error", o.scrub(err))
		return
	}
	if st == nil || st.Token == nil || st.URL != o.url {
		return
	}
	o.mu.Lock()
	cur := o.src
	o.mu.Unlock()
	if cur != nil && cur.current().AccessToken == st.Token.AccessToken {
		return
	}
	secret := st.ClientSecret
	if secret == "" && st.ClientID == o.opts.ClientID {
		secret = o.opts.ClientSecret
	}
	cfg := &oauth2.Config{ClientID: st.ClientID, ClientSecret: secret, Scopes: st.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: st.TokenURL, AuthStyle: oauth2.AuthStyle(st.AuthStyle)}}
	o.install(cfg, st.Token, false)
	o.logger.Debug("oauth: using the stored token")
}

// TokenSource implements auth.OAuthHandler: the source of the token in use,
// nil before there is one.
func (o *OAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.src == nil {
		return nil, nil
	}
	return o.src, nil
}

// Authorize implements auth.OAuthHandler. It is called by the go-sdk's
// Streamable HTTP client when the server answers 401 or 403: it refreshes
// the token, or runs the configured grant, or returns ErrNeedsLogin.
func (o *OAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	o.flow.Lock()
	defer o.flow.Unlock()
	drain := func() {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorPeek))
		resp.Body.Close()
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	insufficient := resp.StatusCode == http.StatusForbidden && bearerParam(challenges, "error") == "insufficient_scope"
	if resp.StatusCode == http.StatusForbidden && !insufficient {
		// A 403 that more scope cannot cure: the retry meets it again and
		// it is reported as the HTTP error it is.
		drain()
		return nil
	}
	// Another request's flow (or a refresh) replaced the token this one
	// was sent with: retry with the new one.
	if sent, cur := req.Header.Get("Authorization"), o.current(); sent != "" && cur != nil && sent != "Bearer "+cur.AccessToken {
		drain()
		return nil
	}
	if resp.StatusCode == http.StatusUnauthorized && o.refresh(ctx) {
		drain()
		return nil
	}
	switch o.opts.Grant {
	case GrantClientCredentials:
		defer drain()
		return o.clientCredentials(ctx, req, challenges)
	}
	if o.opts.Authorize == nil {
		drain()
		why := "no token"
		switch {
		case insufficient:
			scope := bearerParam(challenges, "scope")
			if len(scope) > 256 {
				scope = scope[:256] + "…"
			}
			why = fmt.Sprintf("the token lacks scope %q", scope)
		case o.current() != nil:
			why = "the server refused the token and it could not be refreshed"
			// It is useless: a token stored by a login since replaces it
			// at the next Load, whatever it is.
			o.mu.Lock()
			o.src = nil
			o.mu.Unlock()
		}
		if o.opts.Server == "" {
			return fmt.Errorf("%w (%s)", ErrNeedsLogin, why)
		}
		return fmt.Errorf("%w (%s): server %q: store a token (an authorization-code login), then restart the backend", ErrNeedsLogin, why, o.opts.Server)
	}
	o.stepUp = insufficient
	err := o.code.Authorize(ctx, req, resp)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrAuthorization, ctx.Err())
		}
		return fmt.Errorf("%w: %w", ErrAuthorization, o.scrub(err))
	}
	return nil
}

// fetch is the AuthorizationCodeFetcher given to the go-sdk: Authorize's.
func (o *OAuth) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	o.logger.Info("oauth: authorization needed; waiting for the authorization code")
	return o.opts.Authorize(ctx, args)
}

// scopes is the go-sdk's ScopeFilter: the configured scopes replace the
// discovered ones on a first authorization; a step-up keeps what the
// server challenged for, plus the scopes of the stored token.
func (o *OAuth) scopes(discovered []string) []string {
	if o.stepUp {
		var had []string
		if cur := o.currentSource(); cur != nil {
			had = cur.cfg.Scopes
		}
		return union(union(had, o.opts.Scopes), discovered)
	}
	if len(o.opts.Scopes) > 0 {
		return slices.Clone(o.opts.Scopes)
	}
	return discovered
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// refresh gets a new access token with the refresh token in use, when
// there is one; it reports whether it did.
func (o *OAuth) refresh(ctx context.Context) bool {
	src := o.currentSource()
	if src == nil {
		return false
	}
	tok := src.current()
	if tok.RefreshToken == "" {
		return false
	}
	cctx := context.WithValue(ctx, oauth2.HTTPClient, o.client)
	nt, err := src.cfg.TokenSource(cctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		o.logger.Info("oauth: refreshing the token failed", "error", o.scrub(err))
		return false
	}
	if nt.RefreshToken == "" {
		nt.RefreshToken = tok.RefreshToken
	}
	o.install(src.cfg, nt, true)
	o.logger.Debug("oauth: token refreshed after the server refused it")
	return true
}

// clientCredentials runs the client credentials grant (RFC 6749, section
// 4.4) at the token endpoint the server's metadata names (MCP ext-auth,
// SEP-1046), as the go-sdk's extauth.ClientCredentialsHandler does, with
// the configured scopes and a token source that outlives ctx.
func (o *OAuth) clientCredentials(ctx context.Context, req *http.Request, challenges []oauthex.Challenge) error {
	prm := o.resourceMetadata(ctx, challenges, req.URL.String())
	if len(prm.AuthorizationServers) == 0 {
		return fmt.Errorf("%w: the protected-resource metadata names no authorization server", ErrAuthorization)
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], o.client)
	if err != nil {
		return fmt.Errorf("%w: authorization server metadata: %w", ErrAuthorization, o.scrub(err))
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], TokenEndpoint: strings.TrimSuffix(prm.AuthorizationServers[0], "/") + "/token"}
	}
	scopes := o.opts.Scopes
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	if s := bearerParam(challenges, "scope"); s != "" {
		scopes = strings.Fields(s)
	}
	o.mu.Lock()
	scopes = union(o.granted, scopes)
	o.mu.Unlock()
	style := oauth2.AuthStyleAutoDetect
	switch {
	case slices.Contains(asm.TokenEndpointAuthMethodsSupported, "client_secret_post"):
		style = oauth2.AuthStyleInParams
	case slices.Contains(asm.TokenEndpointAuthMethodsSupported, "client_secret_basic"):
		style = oauth2.AuthStyleInHeader
	}
	cc := &clientcredentials.Config{ClientID: o.opts.ClientID, ClientSecret: o.opts.ClientSecret, TokenURL: asm.TokenEndpoint,
		Scopes: scopes, AuthStyle: style, EndpointParams: url.Values{"resource": {prm.Resource}}}
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, o.client))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrAuthorization, ctx.Err())
		}
		return fmt.Errorf("%w: client credentials grant: %w", ErrAuthorization, o.scrub(err))
	}
	// Later tokens come for as long as the backend lives, not ctx.
	src := oauth2.ReuseTokenSource(tok, cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, o.client)))
	o.mu.Lock()
	o.granted = scopes
	o.src = &savingSource{o: o, src: src, cfg: &oauth2.Config{ClientID: cc.ClientID, Scopes: scopes}, last: tok}
	o.mu.Unlock()
	o.logger.Debug("oauth: client credentials token obtained")
	return nil
}

// resourceMetadata finds the server's protected-resource metadata (RFC
// 9728; MCP 2025-11-25, basic/authorization, "Protected Resource Metadata
// Discovery Requirements"): the challenge's resource_metadata URL, then the
// well-known URL at the endpoint's path, then at the root; failing all, the
// 2025-03-26 fallback (the server's origin is the authorization server).
func (o *OAuth) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, mcpURL string) *oauthex.ProtectedResourceMetadata {
	type cand struct{ url, resource string }
	var cands []cand
	if u := bearerParam(challenges, "resource_metadata"); u != "" {
		cands = append(cands, cand{u, mcpURL})
	}
	ru, err := url.Parse(mcpURL)
	if err == nil {
		mu := *ru
		mu.RawQuery, mu.Fragment = "", ""
		mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
		cands = append(cands, cand{mu.String(), mcpURL})
		mu.Path = "/.well-known/oauth-protected-resource"
		root := *ru
		root.Path, root.RawQuery, root.Fragment = "", "", ""
		cands = append(cands, cand{mu.String(), root.String()})
	}
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, o.client)
		if err == nil && prm != nil {
			return prm
		}
	}
	origin := mcpURL
	if err == nil {
		root := *ru
		root.Path, root.RawQuery, root.Fragment = "", "", ""
		origin = root.String()
	}
	return &oauthex.ProtectedResourceMetadata{Resource: mcpURL, AuthorizationServers: []string{origin}}
}

// bearerParam returns parameter name of the Bearer challenge that has it.
func bearerParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// scrub removes the secrets this client knows (client secret, access and
// refresh tokens) from err's message; errors.Is and errors.As still see
// err.
func (o *OAuth) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	secrets := []string{o.opts.ClientSecret}
	if s := o.currentSource(); s != nil {
		t := s.current()
		secrets = append(secrets, t.AccessToken, t.RefreshToken, s.cfg.ClientSecret)
	}
	changed := false
	for _, s := range secrets {
		if len(s) >= 4 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "[REDACTED]")
			changed = true
		}
	}
	// An authorization server's error body is quoted by oauth2: bound it.
	if len(msg) > maxOAuthErrorText {
		msg = fmt.Sprintf("%s… (%d bytes cut)", strings.ToValidUTF8(msg[:maxOAuthErrorText], ""), len(msg)-maxOAuthErrorText)
		changed = true
	}
	if !changed {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

// maxOAuthErrorText bounds the text of an error of an OAuth flow.
const maxOAuthErrorText = 1024

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

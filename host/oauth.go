package host

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// AuthorizeFunc runs the browser part of the OAuth authorization-code grant
// for server (a [servers.NAME] with an oauth table): it directs a person,
// or a headless program, to args.URL and returns the code, state and iss
// of the redirect (see auth.AuthorizationCodeFetcher). It runs within ctx:
// the start or the call that needed the token.
type AuthorizeFunc func(ctx context.Context, server string, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error)

// OAuthConfig is what NewOAuth needs besides the server's configuration.
type OAuthConfig struct {
	// Store keeps the tokens; nil: a transport.FileTokenStore in
	// transport.DefaultTokenDir.
	Store transport.TokenStore
	// Authorize makes the grant interactive; nil: a server that needs a
	// new authorization fails with transport.ErrNeedsLogin.
	Authorize AuthorizeFunc
	// RedirectURL overrides the redirect URI (default
	// http://127.0.0.1[:redirect_port]/callback).
	RedirectURL string
	// Logger receives the flow's diagnostics (never a token).
	Logger hclog.Logger
}

// NewOAuth returns the OAuth client of server name of cfg, an HTTP server
// with a [servers.NAME.oauth] table, as the Host builds it (and as
// `toolhost login` does, with Authorize set). Errors: ErrUnknownBackend
// when cfg has no such server, or it has no oauth table.
func NewOAuth(cfg *config.Config, name string, oc *OAuthConfig) (*transport.OAuth, error) {
	s := cfg.Servers[name]
	if s == nil || s.OAuth == nil || s.IsStdio() {
		return nil, fmt.Errorf("%w: %q is not an HTTP server with a [servers.%s.oauth] table", ErrUnknownBackend, name, name)
	}
	var c OAuthConfig
	if oc != nil {
		c = *oc
	}
	o := s.OAuth
	opts := &transport.OAuthOptions{Server: name, Grant: transport.OAuthGrant(o.Grant), ClientID: o.ClientID, ClientSecret: o.ClientSecret,
		Scopes: o.Scopes, ClientName: o.ClientName, ClientMetadataURL: o.ClientMetadataURL, RedirectURL: c.RedirectURL,
		Store: c.Store, Logger: c.Logger}
	if opts.RedirectURL == "" && o.RedirectPort > 0 {
		opts.RedirectURL = fmt.Sprintf("http://127.0.0.1:%d/callback", o.RedirectPort)
	}
	if opts.Store == nil {
		opts.Store = &transport.FileTokenStore{}
	}
	if c.Authorize != nil {
		opts.Authorize = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return c.Authorize(ctx, name, args)
		}
	}
	return transport.NewOAuth(s.URL, opts)
}

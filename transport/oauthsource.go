package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/oauth2"
)

// The OAuth token in use: the source that refreshes it and saves every new
// token to the TokenStore (authorization-code grant).

// adopt is the go-sdk's NewTokenSource: the token just obtained by the
// authorization-code grant becomes the one in use, and is saved.
func (o *OAuth) adopt(cfg *oauth2.Config, tok *oauth2.Token) oauth2.TokenSource {
	return o.install(cfg, tok, true)
}

// install makes tok (issued to cfg's client) the token in use, refreshed
// through cfg, and saves it when save is set.
func (o *OAuth) install(cfg *oauth2.Config, tok *oauth2.Token, save bool) *savingSource {
	c := *cfg
	c.Scopes = slices.Clone(cfg.Scopes)
	cctx := context.WithValue(context.Background(), oauth2.HTTPClient, o.client)
	s := &savingSource{o: o, cfg: &c, src: c.TokenSource(cctx, tok), last: tok}
	o.mu.Lock()
	o.src = s
	o.mu.Unlock()
	if save {
		s.save(tok)
	}
	return s
}

func (o *OAuth) currentSource() *savingSource {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.src
}

// current is the token in use (nil: none).
func (o *OAuth) current() *oauth2.Token {
	if s := o.currentSource(); s != nil {
		return s.current()
	}
	return nil
}

// savingSource is the token source in use: it refreshes through cfg and
// saves every new token to the store. A refresh the authorization server
// refuses (or a token that expired with no refresh token) gives no token,
// so the request goes without and the server's 401 leads to Authorize.
type savingSource struct {
	o   *OAuth
	src oauth2.TokenSource
	cfg *oauth2.Config

	mu   sync.Mutex
	last *oauth2.Token
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.src.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) || strings.Contains(err.Error(), "refresh token is not set") {
			s.o.logger.Info("oauth: the token expired and could not be refreshed", "error", s.o.scrub(err))
			return nil, nil
		}
		return nil, fmt.Errorf("%w: refreshing the token: %w", ErrAuthorization, s.o.scrub(err))
	}
	s.mu.Lock()
	changed := s.last == nil || s.last.AccessToken != tok.AccessToken
	s.last = tok
	s.mu.Unlock()
	if changed {
		s.save(tok)
	}
	return tok, nil
}

func (s *savingSource) current() *oauth2.Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// save writes tok to the store (authorization-code grant only).
func (s *savingSource) save(tok *oauth2.Token) {
	o := s.o
	if o.opts.Store == nil || o.opts.Grant != GrantAuthorizationCode {
		return
	}
	st := &StoredToken{URL: o.url, Token: tok, ClientID: s.cfg.ClientID, TokenURL: s.cfg.Endpoint.TokenURL,
		AuthStyle: int(s.cfg.Endpoint.AuthStyle), Scopes: s.cfg.Scopes}
	if s.cfg.ClientSecret != o.opts.ClientSecret {
		st.ClientSecret = s.cfg.ClientSecret // a dynamically registered client's
	}
	if err := o.opts.Store.Save(context.Background(), o.key, st); err != nil {
		o.logger.Warn("oauth: cannot save the token; the next run will need a new login", "error", o.scrub(err))
	}
}

package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/oauth2"

	"github.com/toolhost/toolhost/internal/lazyre"
)

// TokenKey names one stored token: the backend's name and the URL of its MCP
// endpoint. A token is only ever used for the URL it was issued for: a
// server whose url changes needs a new login.
type TokenKey struct {
	// Server is the backend's name (the NAME of [servers.NAME]).
	Server string
	// URL is the server's Streamable HTTP endpoint, as configured.
	URL string
}

// StoredToken is what a TokenStore keeps for one server: the OAuth token and
// what refreshing it needs. Every field is secret or close to it: a store
// must keep it from other users (the file store writes mode 0600).
type StoredToken struct {
	// URL is the MCP server URL the token was issued for (TokenKey.URL).
	URL string `json:"url"`
	// Token is the access token, its type and expiry, and the refresh
	// token if the authorization server issued one.
	Token *oauth2.Token `json:"token"`
	// ClientID is the OAuth client the token was issued to: the configured
	// client_id, or the one dynamic client registration returned.
	ClientID string `json:"client_id"`
	// ClientSecret is the secret of a dynamically registered client (a
	// configured client_secret is never stored).
	ClientSecret string `json:"client_secret,omitempty"`
	// TokenURL is the authorization server's token endpoint, for refresh.
	TokenURL string `json:"token_url"`
	// AuthStyle is how the client authenticates at TokenURL
	// (oauth2.AuthStyle: 0 auto-detect, 1 in params, 2 in header).
	AuthStyle int `json:"auth_style,omitempty"`
	// Scopes are the scopes that were requested for the token.
	Scopes []string `json:"scopes,omitempty"`
}

// TokenStore keeps OAuth tokens between runs, one per TokenKey. Implement it
// to keep tokens in a keychain or a secret manager; the default is a
// FileTokenStore under the user config directory. Its methods may be called
// from many goroutines at once (one per HTTP backend) and must not log the
// tokens.
type TokenStore interface {
	// Load returns the token stored for key, or nil and no error when there
	// is none. A stored token whose URL is not key.URL must not be
	// returned.
	Load(ctx context.Context, key TokenKey) (*StoredToken, error)
	// Save stores tok for key, replacing any earlier one.
	Save(ctx context.Context, key TokenKey, tok *StoredToken) error
	// Delete removes key's token; deleting a missing one is not an error.
	Delete(ctx context.Context, key TokenKey) error
}

// maxTokenFile bounds a token file read back from disk.
const maxTokenFile = 64 << 10

// FileTokenStore keeps each server's token in a JSON file of its own, Dir/
// NAME-HASH.json (HASH: the first 16 hex digits of the SHA-256 of the URL),
// mode 0600 in a directory of mode 0700, written atomically (a temporary
// file renamed over the old one).
type FileTokenStore struct {
	// Dir is the directory of the token files; default DefaultTokenDir.
	Dir string

	mu sync.Mutex // serialises writes of this process
}

var _ TokenStore = (*FileTokenStore)(nil)

// DefaultTokenDir is where tokens are kept by default:
// os.UserConfigDir()/toolhost/tokens ($XDG_CONFIG_HOME/toolhost/tokens or
// ~/.config/toolhost/tokens on Linux, ~/Library/Application Support/
// toolhost/tokens on macOS).
func DefaultTokenDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("token store: no user config directory: %w", err)
	}
	return filepath.Join(dir, "toolhost", "tokens"), nil
}

var fileSafeName = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)

// Path returns the file key's token is kept in.
func (s *FileTokenStore) Path(key TokenKey) (string, error) {
	dir := s.Dir
	if dir == "" {
		d, err := DefaultTokenDir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	name := key.Server
	if !fileSafeName.MatchString(name) {
		name = "server"
	}
	sum := sha256.Sum256([]byte(key.URL))
	return filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8])+".json"), nil
}

// Load reads key's token file. A missing file, or one for another URL, is
// no token.
func (s *FileTokenStore) Load(_ context.Context, key TokenKey) (*StoredToken, error) {
	path, err := s.Path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	if len(data) > maxTokenFile {
		return nil, fmt.Errorf("token store: %s is larger than %d bytes: delete it and log in again", path, maxTokenFile)
	}
	var st StoredToken
	if err := json.Unmarshal(data, &st); err != nil {
		// (The JSON error never quotes the file's contents.)
		return nil, fmt.Errorf("token store: %s is not a token file: delete it and log in again", path)
	}
	if st.URL != key.URL || st.Token == nil {
		return nil, nil
	}
	return &st, nil
}

// Save writes key's token file atomically, mode 0600, creating the
// directory with mode 0700.
func (s *FileTokenStore) Save(_ context.Context, key TokenKey, tok *StoredToken) error {
	path, err := s.Path(key)
	if err != nil {
		return err
	}
	data, err := json.Marshal(tok)
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	ok = true
	return nil
}

// Delete removes key's token file.
func (s *FileTokenStore) Delete(_ context.Context, key TokenKey) error {
	path, err := s.Path(key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// MemoryTokenStore keeps tokens in memory only, for programs that log in
// on every run (and for tests). The zero value is ready to use.
type MemoryTokenStore struct {
	mu sync.Mutex
	m  map[TokenKey]StoredToken
}

var _ TokenStore = (*MemoryTokenStore)(nil)

// Load returns a copy of key's token, or nil.
func (s *MemoryTokenStore) Load(_ context.Context, key TokenKey) (*StoredToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[key]
	if !ok {
		return nil, nil
	}
	tok := *st.Token
	st.Token = &tok
	return &st, nil
}

// Save keeps a copy of tok.
func (s *MemoryTokenStore) Save(_ context.Context, key TokenKey, tok *StoredToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[TokenKey]StoredToken{}
	}
	st := *tok
	t := *tok.Token
	st.Token = &t
	s.m[key] = st
	return nil
}

// Delete forgets key's token.
func (s *MemoryTokenStore) Delete(_ context.Context, key TokenKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

package config

import (
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Store is the [store] table: where the host keeps its state (the audit
// trail, grants, rate limit buckets, idempotency results, tool pins,
// circuit breaker state; host/store).
type Store struct {
	// URL is the database (key url): "sqlite:///ABSOLUTE/PATH" (a path
	// relative to the configuration's directory is accepted as
	// "sqlite://PATH" and resolved), "sqlite::memory:" (memory only: state
	// lasts as long as the process), or "postgres://USER@HOST:PORT/DB"
	// (shared by replicas). Default: empty, which `toolhost serve` takes as
	// SQLite in the user's state directory (store.DefaultURL).
	URL string `toml:"url" json:"-"`
	// Required (key required, default true): a store that cannot be
	// opened at start fails the start. false: a warning, and the host runs
	// in memory-only mode (shown by status) until a restart.
	Required *bool `toml:"required" json:",omitempty"`
	// AuditRetention (key audit_retention, default "90d"): audit rows
	// older than this are deleted by a background sweep. "0s" keeps them.
	AuditRetention *Duration `toml:"audit_retention" json:",omitempty"`
	// Audit (key audit, default true): audit records go to the store.
	// ([host] audit_log, the JSON Lines file, is independent of it.)
	Audit *bool `toml:"audit" json:",omitempty"`
	// QueueSize (key queue_size, default 4096) is how many audit records
	// may wait to be written; QueueWait (key queue_wait, default "1ms") is
	// how long a call may wait for room when it is full before its record
	// is dropped (counted and reported, never silently).
	QueueSize int      `toml:"queue_size" json:",omitempty"`
	QueueWait Duration `toml:"queue_wait" json:",omitempty"`

	// Idempotency (issue 25, item 5; config/idempotency.go).
	// IdempotencyTTL (key idempotency_ttl, default "24h") is how long the
	// result of a call made with an idempotency key is kept and replayed
	// to a call made again with that key (IdemTTL).
	IdempotencyTTL Duration `toml:"idempotency_ttl" json:",omitempty"`
}

// Store defaults.
const (
	DefaultAuditRetention = 90 * 24 * time.Hour
	DefaultStoreQueueSize = 4096
	DefaultStoreQueueWait = time.Millisecond
)

// IsRequired reports whether a store that cannot be opened fails the start.
func (s *Store) IsRequired() bool { return s.Required == nil || *s.Required }

// AuditOn reports whether audit records go to the store.
func (s *Store) AuditOn() bool { return s.Audit == nil || *s.Audit }

// Retention returns the audit retention (0: keep everything).
func (s *Store) Retention() time.Duration {
	if s.AuditRetention == nil {
		return DefaultAuditRetention
	}
	return s.AuditRetention.Std()
}

// validateStore checks [store] and fills in its defaults.
func (l *loader) validateStore(s *Store) {
	key := toml.Key{"store"}
	k := func(n string) toml.Key { return append(key[:1:1], n) }
	switch u := s.URL; {
	case u == "", u == "sqlite::memory:", u == "sqlite://:memory:", strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
	case strings.HasPrefix(u, "sqlite://"):
		path := strings.TrimPrefix(u, "sqlite://")
		if path == "" {
			l.errorf(k("url"), "names no file: write sqlite:///ABSOLUTE/PATH or sqlite://RELATIVE/PATH")
			break
		}
		s.URL = "sqlite://" + resolvePath(l.dir, path)
	default:
		l.errorf(k("url"), "must start with sqlite:// (a file), sqlite::memory: or postgres://; got %q", redactURL(u))
	}
	if s.QueueSize < 0 {
		l.errorf(k("queue_size"), "must not be negative")
	}
	if s.QueueSize == 0 {
		s.QueueSize = DefaultStoreQueueSize
	}
	if s.QueueWait == 0 {
		s.QueueWait = Duration(DefaultStoreQueueWait)
	}
	l.validateIdempotency(s)
}

// redactURL hides a password in u (user:PASSWORD@).
func redactURL(u string) string {
	if at := strings.Index(u, "@"); at >= 0 {
		if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
			if colon := strings.Index(u[scheme+3:at], ":"); colon >= 0 {
				return u[:scheme+3+colon+1] + "xxxxx" + u[at:]
			}
		}
	}
	return u
}

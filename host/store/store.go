// Package store is toolhost's persistence: the audit trail, grants, rate
// limit buckets, idempotency results, tool-definition pins and circuit
// breaker state, in one schema (migrations/) on one of two engines:
//
//   - SQLite (the default; embedded, no cgo: github.com/ncruces/go-sqlite3),
//     for one process: "sqlite:///abs/path/toolhost.db", or "sqlite::memory:"
//     for a private in-memory database (memory-only mode);
//   - PostgreSQL (github.com/jackc/pgx/v5 through database/sql), for many
//     replicas sharing one state: "postgres://user@host:port/db?sslmode=disable"
//     (any URL or key=value string pgx accepts).
//
// Open applies the pending migrations (pressly/goose; on PostgreSQL under a
// session advisory lock, so replicas starting together apply them once).
// Times are microseconds since the Unix epoch; where replicas must agree on
// "now" (a grant's expiry, a token bucket, an open circuit) the SQL reads
// the database's clock (nowMicros), so a replica's skewed clock cannot
// extend a grant.
//
// The features keep their queries in files of their own (audit.go,
// grants.go, ratelimit.go, idempotency.go, pins.go, breakers.go); every
// query is parameterised (db.q turns ? into $n for PostgreSQL).
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Engines (DB.Engine).
const (
	EngineSQLite   = "sqlite"
	EnginePostgres = "postgres"
)

// Errors of Open, Migrate and Check. Each wraps the engine's own error.
var (
	// ErrURL: the [store] url is not one Open knows ("sqlite://PATH",
	// "sqlite::memory:", "postgres://..." or "postgresql://...").
	ErrURL = errors.New("store: bad url")
	// ErrUnreachable: the database could not be opened or reached (no
	// server at the address, authentication refused, a directory that
	// cannot be created).
	ErrUnreachable = errors.New("store: unreachable")
	// ErrCorrupt: the SQLite file is not a database or fails SQLite's
	// quick_check (https://sqlite.org/pragma.html#pragma_quick_check); the
	// error names the file. Move it away to start afresh.
	ErrCorrupt = errors.New("store: database file is corrupt")
	// ErrSchemaNewer: the database was migrated by a newer toolhost (its
	// schema version is above every migration this binary has).
	ErrSchemaNewer = errors.New("store: schema is newer than this toolhost")
	// ErrMigrate: a migration failed; nothing of it was applied.
	ErrMigrate = errors.New("store: migration failed")
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Options configures Open. The zero value is valid.
type Options struct {
	// NoMigrate leaves pending migrations unapplied (toolhost store check);
	// by default Open applies them.
	NoMigrate bool
	// ConnectTimeout bounds Open's first contact with the database
	// (default 10s).
	ConnectTimeout time.Duration
	// Replica names this process in what it writes (audit.replica,
	// idempotency.owner); default hostname:pid.
	Replica string
}

// DB is an open store. Its methods are safe for concurrent use.
type DB struct {
	sql     *sql.DB
	engine  string
	display string // the URL without its password, for messages
	path    string // SQLite: the file ("" in memory)
	replica string
	closed  atomic.Bool
}

// Open opens the store at rawURL and, unless o.NoMigrate, applies its
// pending migrations. Errors: ErrURL, ErrUnreachable, ErrCorrupt,
// ErrSchemaNewer, ErrMigrate.
func Open(ctx context.Context, rawURL string, o Options) (*DB, error) {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.Replica == "" {
		host, _ := os.Hostname()
		o.Replica = host + ":" + strconv.Itoa(os.Getpid())
	}
	db := &DB{replica: o.Replica}
	var err error
	switch {
	case rawURL == "sqlite::memory:" || rawURL == "sqlite://:memory:":
		db.engine, db.display = EngineSQLite, "sqlite::memory:"
		// memdb: one database shared by the pool's connections (a plain
		// ":memory:" would give each connection its own). Its writers
		// lock each other out as a file's do, so they wait as long:
		// without busy_timeout a second connection's write fails at once
		// with "database is locked" (SQLITE_BUSY).
		name := "/toolhost-" + randomHex(8)
		memdb.Create(name, nil)
		db.sql, err = sql.Open("sqlite3", "file:"+name+"?vfs=memdb&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_txlock=immediate")
	case strings.HasPrefix(rawURL, "sqlite://"):
		db.engine = EngineSQLite
		db.path = strings.TrimPrefix(rawURL, "sqlite://")
		if db.path == "" || !filepath.IsAbs(db.path) {
			return nil, fmt.Errorf("%w %q: want sqlite:///ABSOLUTE/PATH (three slashes)", ErrURL, rawURL)
		}
		db.display = "sqlite://" + db.path
		if err := os.MkdirAll(filepath.Dir(db.path), 0o700); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, db.display, err)
		}
		dsn := (&url.URL{Scheme: "file", Path: db.path}).String() +
			"?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_pragma=foreign_keys(1)&_txlock=immediate"
		db.sql, err = sql.Open("sqlite3", dsn)
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		db.engine = EnginePostgres
		db.display = redactURL(rawURL)
		db.sql, err = sql.Open("pgx", rawURL)
	default:
		return nil, fmt.Errorf("%w %q: want sqlite:///PATH, sqlite::memory: or postgres://HOST/DB", ErrURL, redactURL(rawURL))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, db.display, err)
	}
	if err := db.ready(ctx, o); err != nil {
		db.sql.Close()
		return nil, err
	}
	return db, nil
}

// ready checks that the database answers and applies the migrations.
// Its first contact, bounded by o.ConnectTimeout, costs the same whatever
// the database's size: for SQLite it reads the file's header and schema
// (page 1), which is where a file that is not a database fails
// (ErrCorrupt). The whole file's check, PRAGMA quick_check, is O(size) —
// over 10 s for an 800 MB file after a reboot's cold page cache — so it
// runs in Check (toolhost store check), not at every start; a page
// damaged elsewhere fails the statements that read it.
func (db *DB) ready(ctx context.Context, o Options) error {
	pctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	if db.engine == EngineSQLite {
		var n int
		if err := db.sql.QueryRowContext(pctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
			if isNotADB(err) {
				return fmt.Errorf("%w: %s: %v", ErrCorrupt, db.path, err)
			}
			return fmt.Errorf("%w: %s: %v", ErrUnreachable, db.display, err)
		}
	} else if err := db.sql.PingContext(pctx); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, db.display, err)
	}
	if o.NoMigrate {
		return nil
	}
	_, err := db.Migrate(ctx)
	return err
}

func isNotADB(err error) bool {
	s := err.Error()
	return strings.Contains(s, "not a database") || strings.Contains(s, "malformed") || strings.Contains(s, "corrupt")
}

// provider returns the goose provider of db's migrations.
func (db *DB) provider() (*goose.Provider, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.engine == EnginePostgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	opts = append(opts, goose.WithDisableGlobalRegistry(true), goose.WithTableName("toolhost_schema"))
	return goose.NewProvider(dialect, db.sql, sub, opts...)
}

// Migration is one migration applied by Migrate.
type Migration struct {
	Version  int64
	Name     string // its file
	Duration time.Duration
}

// Migrate applies the pending migrations, in order, each in a transaction,
// and returns those it applied (none when the schema is current). Errors:
// ErrSchemaNewer, ErrMigrate.
func (db *DB) Migrate(ctx context.Context) ([]Migration, error) {
	p, err := db.provider()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMigrate, err)
	}
	if cur, target, err := p.GetVersions(ctx); err == nil && cur > target {
		return nil, fmt.Errorf("%w: %s is at version %d, this toolhost knows up to %d", ErrSchemaNewer, db.display, cur, target)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMigrate, db.display, err)
	}
	out := make([]Migration, 0, len(res))
	for _, r := range res {
		out = append(out, Migration{Version: r.Source.Version, Name: filepath.Base(r.Source.Path), Duration: r.Duration})
	}
	return out, nil
}

// CheckResult is what Check finds.
type CheckResult struct {
	Engine  string
	URL     string // without a password
	Version int64  // the schema version applied
	Latest  int64  // the newest migration this toolhost has
	Pending []int64
}

// Check reports the schema's state without changing it and, for SQLite,
// checks the whole file with PRAGMA quick_check (O(size): it reads every
// page; bound it with ctx). Errors: ErrCorrupt (quick_check found damage),
// ErrSchemaNewer.
func (db *DB) Check(ctx context.Context) (*CheckResult, error) {
	if db.engine == EngineSQLite && db.path != "" {
		var res string
		if err := db.sql.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&res); err != nil {
			if isNotADB(err) {
				return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, db.path, err)
			}
			return nil, fmt.Errorf("%s: quick_check: %w", db.display, err)
		}
		if res != "ok" {
			return nil, fmt.Errorf("%w: %s: quick_check: %s", ErrCorrupt, db.path, res)
		}
	}
	p, err := db.provider()
	if err != nil {
		return nil, err
	}
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", db.display, err)
	}
	r := &CheckResult{Engine: db.engine, URL: db.display, Version: cur, Latest: target}
	if cur > target {
		return r, fmt.Errorf("%w: %s is at version %d, this toolhost knows up to %d", ErrSchemaNewer, db.display, cur, target)
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range st {
		if s.State == goose.StatePending {
			r.Pending = append(r.Pending, s.Source.Version)
		}
	}
	return r, nil
}

// Engine returns EngineSQLite or EnginePostgres.
func (db *DB) Engine() string { return db.engine }

// Shared reports whether the store is shared by replicas (PostgreSQL):
// then state that must agree across processes (token buckets, breakers) is
// kept in the database rather than only in memory.
func (db *DB) Shared() bool { return db.engine == EnginePostgres }

// String returns the store's URL without a password.
func (db *DB) String() string { return db.display }

// Replica returns the name this process writes its rows under.
func (db *DB) Replica() string { return db.replica }

// SQL returns the database handle, for tests and tools that read the
// schema directly (the scale-out test counts audit rows with it).
func (db *DB) SQL() *sql.DB { return db.sql }

// Close closes the database. It is safe to call more than once.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	return db.sql.Close()
}

// q returns query with its ? placeholders as the engine wants them:
// unchanged for SQLite, $1, $2, ... for PostgreSQL. Queries are written
// with ? only (never inside a string literal).
func (db *DB) q(query string) string {
	if db.engine != EnginePostgres {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// nowMicros returns the SQL expression of the database's clock in
// microseconds since the Unix epoch (BIGINT).
func (db *DB) nowMicros() string {
	if db.engine == EnginePostgres {
		return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)"
	}
	return "CAST(unixepoch('subsec') * 1000000 AS INTEGER)"
}

// Now returns the database's clock (see nowMicros).
func (db *DB) Now(ctx context.Context) (time.Time, error) {
	var us int64
	if err := db.sql.QueryRowContext(ctx, "SELECT "+db.nowMicros()).Scan(&us); err != nil {
		return time.Time{}, err
	}
	return time.UnixMicro(us).UTC(), nil
}

// randomHex returns n random bytes as 2n hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewID returns a random id of 32 hex digits.
func NewID() string { return randomHex(16) }

// TimeID returns a time-ordered id of time t, as UUIDv7 is (RFC 9562,
// section 5.7): 32 hex digits, t in microseconds since the Unix epoch (16,
// big-endian) and 16 random ones. Audit rows' ids and the correlation ids
// the host makes are TimeIDs: a new row goes to the end of the primary
// key's and the correlation index's B-trees instead of a random place in
// them (34% less CPU per row on SQLite, BenchmarkInsertAudit, more as the
// table grows), and the same locality for PostgreSQL; 64 random bits keep
// ids of one microsecond, and of replicas, apart. Rows written before have
// random ids; nothing reads order from ids.
func TimeID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMicro()))
	rand.Read(b[8:])
	return hex.EncodeToString(b[:])
}

// redactURL returns u with its password replaced by "xxxxx".
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	return p.Redacted()
}

// DefaultURL returns the store of a configuration without a [store] url:
// SQLite in the user's state directory ($XDG_STATE_HOME/toolhost/toolhost.db,
// or ~/.local/state/toolhost/toolhost.db).
func DefaultURL() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("store: no state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return "sqlite://" + filepath.Join(dir, "toolhost", "toolhost.db"), nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Grants (issue 25, item 3): a subject (a gateway client or a profile) may
// call a tool (a catalogue name, or a glob of them) until the grant expires,
// a number of times or any number. Every time is the database's clock
// (nowMicros): created and expires are computed by the database when the
// grant is made, and "live" is decided by the database when it is spent, so
// replicas with skewed clocks agree and none can extend a grant.

// Subject kinds (Grant.SubjectKind).
const (
	SubjectClient  = "client"
	SubjectProfile = "profile"
)

// Limits of a grant's fields (CreateGrant refuses longer ones with
// ErrBadGrant).
const (
	MaxGrantSubject = 256
	MaxGrantTool    = 256
	MaxGrantBy      = 256
	MaxGrantReason  = 1024
	// MaxGrantTTL bounds a grant's time to live (a year): a grant is a
	// temporary permission; a permanent one belongs in [policy].
	MaxGrantTTL = 366 * 24 * time.Hour
	// MaxGrantUses bounds NewGrant.Uses.
	MaxGrantUses = 1 << 30
)

// Errors of the grant queries.
var (
	// ErrBadGrant: CreateGrant was given a grant it cannot store: an
	// unknown subject kind, an empty or too long subject or tool, a tool
	// glob that is not valid doublestar syntax, a TTL not in (0, 1 year], a
	// negative or too large number of uses.
	ErrBadGrant = errors.New("store: bad grant")
	// ErrNoGrant: RevokeGrant names no grant, or one already revoked.
	ErrNoGrant = errors.New("store: no such grant")
)

// Grant is one row of the grants table.
type Grant struct {
	ID          string    `json:"id"`           // 16 hex digits
	SubjectKind string    `json:"subject_kind"` // SubjectClient or SubjectProfile
	Subject     string    `json:"subject"`      // the client's or profile's name
	Tool        string    `json:"tool"`         // a catalogue name, or a glob of them (doublestar)
	Created     time.Time `json:"created"`      // database clock, UTC
	Expires     time.Time `json:"expires"`      // database clock, UTC
	// UsesLeft is how many more calls the grant allows; nil: any number.
	UsesLeft  *int   `json:"uses_left"`
	CreatedBy string `json:"created_by,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Revoked is when RevokeGrant revoked it (database clock); nil if not.
	Revoked *time.Time `json:"revoked,omitempty"`
}

// Live reports whether g may still be spent at now (the database's clock,
// DB.Now): not revoked, not expired, a use left.
func (g *Grant) Live(now time.Time) bool {
	return g.Revoked == nil && now.Before(g.Expires) && (g.UsesLeft == nil || *g.UsesLeft > 0)
}

// NewGrant is what CreateGrant stores.
type NewGrant struct {
	SubjectKind string        // SubjectClient or SubjectProfile
	Subject     string        // 1 to MaxGrantSubject bytes
	Tool        string        // a catalogue name or a glob; 1 to MaxGrantTool bytes
	TTL         time.Duration // > 0, at most MaxGrantTTL; from the database's now
	Uses        int           // 0: any number; else 1 to MaxGrantUses
	CreatedBy   string        // who made it (an operator, "approval"): at most MaxGrantBy bytes
	Reason      string        // at most MaxGrantReason bytes
}

// Subject is one of the identities a call is made under (its client, its
// profile); ConsumeGrant takes the grants of any of them.
type Subject struct {
	Kind string // SubjectClient or SubjectProfile
	Name string
}

// check returns an error wrapping ErrBadGrant when g cannot be stored.
func (g *NewGrant) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadGrant, fmt.Sprintf(format, args...))
	}
	switch {
	case g.SubjectKind != SubjectClient && g.SubjectKind != SubjectProfile:
		return bad("subject kind %q is not %q or %q", g.SubjectKind, SubjectClient, SubjectProfile)
	case g.Subject == "" || len(g.Subject) > MaxGrantSubject || !utf8.ValidString(g.Subject):
		return bad("the subject must be 1 to %d bytes of UTF-8", MaxGrantSubject)
	case g.Tool == "" || len(g.Tool) > MaxGrantTool || !utf8.ValidString(g.Tool):
		return bad("the tool must be 1 to %d bytes of UTF-8", MaxGrantTool)
	case !doublestar.ValidatePattern(g.Tool):
		return bad("the tool %q is not a valid glob", g.Tool)
	case g.TTL <= 0 || g.TTL > MaxGrantTTL:
		return bad("the ttl %s is not in (0, %s]", g.TTL, MaxGrantTTL)
	case g.TTL < time.Microsecond:
		return bad("the ttl %s is shorter than a microsecond", g.TTL)
	case g.Uses < 0 || g.Uses > MaxGrantUses:
		return bad("uses %d is not 0 (any number) or 1 to %d", g.Uses, MaxGrantUses)
	case len(g.CreatedBy) > MaxGrantBy || !utf8.ValidString(g.CreatedBy):
		return bad("created_by must be at most %d bytes of UTF-8", MaxGrantBy)
	case len(g.Reason) > MaxGrantReason || !utf8.ValidString(g.Reason):
		return bad("the reason must be at most %d bytes of UTF-8", MaxGrantReason)
	}
	return nil
}

const grantColumns = "id, subject_kind, subject, tool, created_us, expires_us, uses_left, created_by, reason, revoked_us"

// CreateGrant stores a new grant and returns it: created is the database's
// now, expires created + TTL (both by the database's clock, never this
// process's). Errors: ErrBadGrant, or the database's.
func (db *DB) CreateGrant(ctx context.Context, g NewGrant) (*Grant, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	var uses any
	if g.Uses > 0 {
		uses = int64(g.Uses)
	}
	id := randomHex(8)
	// One reading of the clock for both times (a derived table), typed
	// parameters (PostgreSQL cannot infer a type from a SELECT list).
	q := db.q(`INSERT INTO grants (` + grantColumns + `)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), t.n, t.n + CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), NULL
FROM (SELECT ` + db.nowMicros() + ` AS n) t
RETURNING ` + grantColumns)
	row := db.sql.QueryRowContext(ctx, q, id, g.SubjectKind, g.Subject, g.Tool, g.TTL.Microseconds(), uses, g.CreatedBy, g.Reason)
	return scanGrant(row)
}

type scanner interface{ Scan(dest ...any) error }

func scanGrant(s scanner) (*Grant, error) {
	var (
		g                Grant
		created, expires int64
		uses, revoked    sql.NullInt64
	)
	if err := s.Scan(&g.ID, &g.SubjectKind, &g.Subject, &g.Tool, &created, &expires, &uses, &g.CreatedBy, &g.Reason, &revoked); err != nil {
		return nil, err
	}
	g.Created, g.Expires = time.UnixMicro(created).UTC(), time.UnixMicro(expires).UTC()
	if uses.Valid {
		n := int(uses.Int64)
		g.UsesLeft = &n
	}
	if revoked.Valid {
		t := time.UnixMicro(revoked.Int64).UTC()
		g.Revoked = &t
	}
	return &g, nil
}

// ListGrants returns the live grants (not revoked, not expired by the
// database's clock, a use left), or with all every grant ever made, newest
// first.
func (db *DB) ListGrants(ctx context.Context, all bool) ([]*Grant, error) {
	q := "SELECT " + grantColumns + " FROM grants"
	if !all {
		q += " WHERE revoked_us IS NULL AND expires_us > " + db.nowMicros() + " AND (uses_left IS NULL OR uses_left > 0)"
	}
	q += " ORDER BY created_us DESC, id"
	rows, err := db.sql.QueryContext(ctx, db.q(q))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Grant
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// GetGrant returns the grant id (live or not). Errors: ErrNoGrant.
func (db *DB) GetGrant(ctx context.Context, id string) (*Grant, error) {
	g, err := scanGrant(db.sql.QueryRowContext(ctx, db.q("SELECT "+grantColumns+" FROM grants WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", ErrNoGrant, id)
	}
	return g, err
}

// RevokeGrant revokes the grant id at the database's now and returns it:
// it can no longer be spent (a call that spent it already keeps its
// answer). Errors: ErrNoGrant (no such grant, or already revoked).
func (db *DB) RevokeGrant(ctx context.Context, id string) (*Grant, error) {
	g, err := scanGrant(db.sql.QueryRowContext(ctx,
		db.q("UPDATE grants SET revoked_us = "+db.nowMicros()+" WHERE id = ? AND revoked_us IS NULL RETURNING "+grantColumns), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q (see toolhost grants --all)", ErrNoGrant, id)
	}
	return g, err
}

// maxCandidates bounds the live grants ConsumeGrant reads for one call.
const maxCandidates = 256

// ConsumeGrant spends one use of a live grant of any of subjects for tool
// (a catalogue name) and returns its id, or "" when there is none. A grant
// applies when its tool is the name or a glob that matches it
// (doublestar). Among those that apply it prefers one of any number of
// uses (nothing to spend), then the one that expires first. A counted use
// is taken by one conditional UPDATE (uses_left > 0, not revoked, not
// expired by the database's clock), so two replicas (or two calls) can
// never both spend the last use: the one that loses tries the next
// candidate. Errors are the database's (the caller refuses the call).
func (db *DB) ConsumeGrant(ctx context.Context, subjects []Subject, tool string) (string, error) {
	if len(subjects) == 0 {
		return "", nil
	}
	var b strings.Builder
	args := make([]any, 0, 2*len(subjects))
	b.WriteString("SELECT id, tool, uses_left, expires_us FROM grants WHERE revoked_us IS NULL AND expires_us > ")
	b.WriteString(db.nowMicros())
	b.WriteString(" AND (uses_left IS NULL OR uses_left > 0) AND (")
	for i, s := range subjects {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(subject_kind = ? AND subject = ?)")
		args = append(args, s.Kind, s.Name)
	}
	b.WriteString(") ORDER BY expires_us LIMIT ")
	b.WriteString(fmt.Sprint(maxCandidates))
	rows, err := db.sql.QueryContext(ctx, db.q(b.String()), args...)
	if err != nil {
		return "", err
	}
	type candidate struct {
		id        string
		unlimited bool
		expires   int64
	}
	var cands []candidate
	for rows.Next() {
		var (
			id, pattern string
			uses        sql.NullInt64
			expires     int64
		)
		if err := rows.Scan(&id, &pattern, &uses, &expires); err != nil {
			rows.Close()
			return "", err
		}
		if pattern == tool || doublestar.MatchUnvalidated(pattern, tool) {
			cands = append(cands, candidate{id, !uses.Valid, expires})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].unlimited != cands[j].unlimited {
			return cands[i].unlimited
		}
		return cands[i].expires < cands[j].expires
	})
	spend := db.q("UPDATE grants SET uses_left = uses_left - 1 WHERE id = ? AND revoked_us IS NULL AND uses_left > 0 AND expires_us > " + db.nowMicros())
	for _, c := range cands {
		if c.unlimited {
			// Nothing to spend: it was live when read, in this query.
			return c.id, nil
		}
		res, err := db.sql.ExecContext(ctx, spend, c.id)
		if err != nil {
			return "", err
		}
		if n, err := res.RowsAffected(); err != nil {
			return "", err
		} else if n == 1 {
			return c.id, nil
		}
		// Another call spent its last use (or it expired) meanwhile.
	}
	return "", nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Idempotency keys (issue 25, item 5): the table idempotency holds, per
// key, either a claim ("running": a call with this key is being made by
// the owner) or the result of the first completed call ("done"), until
// expires_us. A running row's expires_us is its lease: the call's deadline
// and a margin; once it has passed, the claim is stale (its owner died or
// lost the store) and the next claim takes it over. A done row's
// expires_us is its result's end ([store] idempotency_ttl). Every time is
// the database's clock, so replicas with skewed clocks agree.
//
// The caller (host/idempotency.go) makes the key: it scopes the caller's
// key by the client (or profile) that sent it. Tool and ArgsHash are what
// a later use of the key must match.

// IdemStatus is what ClaimIdempotency found.
type IdemStatus int

const (
	// IdemClaimed: the key was free (or its row had expired): the caller
	// owns it now (IdemAnswer.Token) and makes the call, then
	// CompleteIdempotency or ReleaseIdempotency.
	IdemClaimed IdemStatus = iota + 1
	// IdemDone: a call with the key and the same tool and arguments
	// completed; IdemAnswer.Result is its result.
	IdemDone
	// IdemRunning: a call with the key and the same tool and arguments is
	// being made by IdemAnswer.Owner (a replica); its claim is stale in
	// IdemAnswer.ExpiresIn unless it completes. Ask again later.
	IdemRunning
	// IdemConflict: the key was used for another tool (IdemAnswer.Tool) or
	// with other arguments.
	IdemConflict
)

// IdemClaim is a call's claim of an idempotency key.
type IdemClaim struct {
	Key      string        // the scoped key (at most a few hundred bytes; any text)
	Tool     string        // the catalogue tool called
	ArgsHash string        // the hash of its canonical arguments
	Lease    time.Duration // how long the claim holds before it is stale (> 0)
}

// IdemAnswer is ClaimIdempotency's answer.
type IdemAnswer struct {
	Status IdemStatus
	// Token is the claim's owner token (IdemClaimed), for
	// CompleteIdempotency and ReleaseIdempotency.
	Token string
	// Result is the stored result (IdemDone), as CompleteIdempotency was
	// given it.
	Result []byte
	// Tool is the tool the key was first used for (IdemConflict, IdemDone,
	// IdemRunning).
	Tool string
	// Owner is the replica (DB.Replica) holding the claim (IdemRunning).
	Owner string
	// ExpiresIn is, by the database's clock, the time left before a
	// running claim is stale (IdemRunning) or before a stored result
	// expires (IdemDone).
	ExpiresIn time.Duration
}

// ClaimIdempotency claims c.Key for a call, or says why not (see
// IdemStatus). Any number of processes may claim one key concurrently:
// exactly one gets IdemClaimed. A row past its expiry (a stale claim, an
// expired result) is taken over, whatever its tool and arguments. Errors
// are the database's (ctx bounds them).
func (db *DB) ClaimIdempotency(ctx context.Context, c IdemClaim) (IdemAnswer, error) {
	if c.Lease <= 0 {
		return IdemAnswer{}, fmt.Errorf("store: idempotency claim of %q: lease %v is not positive", c.Key, c.Lease)
	}
	token := randomHex(8)
	owner := db.replica + "#" + token
	now := db.nowMicros()
	insert := db.q("INSERT INTO idempotency (key, tool, args_hash, state, owner, created_us, expires_us) VALUES (?, ?, ?, 'running', ?, " +
		now + ", " + now + " + ?) ON CONFLICT (key) DO NOTHING")
	sel := db.q("SELECT tool, args_hash, state, result, owner, expires_us, " + now + " FROM idempotency WHERE key = ?")
	takeover := db.q("UPDATE idempotency SET tool = ?, args_hash = ?, state = 'running', result = NULL, owner = ?, created_us = " + now +
		", expires_us = " + now + " + ? WHERE key = ? AND owner = ? AND expires_us = ? AND expires_us <= " + now)
	lease := c.Lease.Microseconds()
	// Each round either claims, answers, or saw the row change under it
	// (deleted, taken over): a bounded number of rounds in practice; ctx
	// bounds them in any case.
	for {
		res, err := db.sql.ExecContext(ctx, insert, c.Key, c.Tool, c.ArgsHash, owner, lease)
		if err != nil {
			return IdemAnswer{}, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return IdemAnswer{}, err
		} else if n == 1 {
			return IdemAnswer{Status: IdemClaimed, Token: token}, nil
		}
		var (
			tool, hash, state, rowOwner string
			result                      sql.NullString
			expires, dbNow              int64
		)
		err = db.sql.QueryRowContext(ctx, sel, c.Key).Scan(&tool, &hash, &state, &result, &rowOwner, &expires, &dbNow)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released since: claim again
		}
		if err != nil {
			return IdemAnswer{}, err
		}
		if expires <= dbNow {
			res, err := db.sql.ExecContext(ctx, takeover, c.Tool, c.ArgsHash, owner, lease, c.Key, rowOwner, expires)
			if err != nil {
				return IdemAnswer{}, err
			}
			if n, err := res.RowsAffected(); err != nil {
				return IdemAnswer{}, err
			} else if n == 1 {
				return IdemAnswer{Status: IdemClaimed, Token: token}, nil
			}
			if err := ctx.Err(); err != nil {
				return IdemAnswer{}, err
			}
			continue // another took it over first: look again
		}
		left := time.Duration(expires-dbNow) * time.Microsecond
		switch {
		case tool != c.Tool || hash != c.ArgsHash:
			return IdemAnswer{Status: IdemConflict, Tool: tool}, nil
		case state == "done":
			return IdemAnswer{Status: IdemDone, Result: []byte(result.String), Tool: tool, ExpiresIn: left}, nil
		}
		replica, _, _ := strings.Cut(rowOwner, "#")
		return IdemAnswer{Status: IdemRunning, Tool: tool, Owner: replica, ExpiresIn: left}, nil
	}
}

// CompleteIdempotency stores result as the answer to key's claim (token,
// from ClaimIdempotency) for ttl from now (the database's clock). It
// reports false when the claim is no longer the caller's (it went stale
// and was taken over, or was swept): nothing is stored then.
func (db *DB) CompleteIdempotency(ctx context.Context, key, token string, result []byte, ttl time.Duration) (bool, error) {
	res, err := db.sql.ExecContext(ctx, db.q("UPDATE idempotency SET state = 'done', result = ?, expires_us = "+db.nowMicros()+
		" + ? WHERE key = ? AND owner = ? AND state = 'running'"), string(result), ttl.Microseconds(), key, db.replica+"#"+token)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseIdempotency gives up key's claim (token, from ClaimIdempotency):
// the call did not complete, and the next claim of the key makes it
// again. A claim that is no longer the caller's is left alone.
func (db *DB) ReleaseIdempotency(ctx context.Context, key, token string) error {
	_, err := db.sql.ExecContext(ctx, db.q("DELETE FROM idempotency WHERE key = ? AND owner = ? AND state = 'running'"), key, db.replica+"#"+token)
	return err
}

// SweepIdempotency deletes the rows past their expiry (results older than
// their TTL, stale claims) and returns how many it deleted, with the error
// that stopped it. It deletes them as SweepAudit does, SweepChunk
// rows per statement with a pause after each, so a backlog (a day of keyed
// calls after a day down) neither holds the write lock throughout nor is
// rolled back whole when ctx ends.
func (db *DB) SweepIdempotency(ctx context.Context) (int64, error) {
	q := "DELETE FROM idempotency WHERE rowid IN (SELECT rowid FROM idempotency WHERE expires_us <= " + db.nowMicros() + " ORDER BY expires_us LIMIT ?)"
	if db.engine == EnginePostgres {
		q = "DELETE FROM idempotency WHERE key IN (SELECT key FROM idempotency WHERE expires_us <= " + db.nowMicros() + " ORDER BY expires_us LIMIT $1 FOR UPDATE SKIP LOCKED)"
	}
	return db.deleteInChunks(ctx, q, SweepChunk)
}

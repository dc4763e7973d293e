package store

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"
)

// Rate limit buckets (issue 25, item 4): token buckets that replicas share
// (table rate_buckets, one row per limit key). A bucket holds up to
// capacity tokens and gains perSec tokens a second by the DATABASE clock,
// so replicas whose clocks disagree still refill it at one rate; it is full
// when first used. Each take is one atomic statement (an upsert whose
// update is guarded by "a token is there"), so concurrent replicas never
// take the same token.

// least and greatest are the engine's two-argument minimum and maximum.
func (db *DB) least() string {
	if db.engine == EnginePostgres {
		return "LEAST"
	}
	return "MIN"
}

func (db *DB) greatest() string {
	if db.engine == EnginePostgres {
		return "GREATEST"
	}
	return "MAX"
}

// refilled is the SQL expression of the bucket's tokens now (now being
// excluded.updated_us, the database clock read once by the statement): its
// stored tokens plus what it gained since updated_us (never less than
// nothing: a clock that went back refills nothing), at most its capacity.
// Its parameters are the capacity and the refill rate in tokens per µs.
func (db *DB) refilled() string {
	return db.least() + "(CAST(? AS DOUBLE PRECISION), rate_buckets.tokens + " +
		db.greatest() + "(0, excluded.updated_us - rate_buckets.updated_us) * CAST(? AS DOUBLE PRECISION))"
}

// RateTake takes one token from the bucket key (created full on first use)
// that holds up to capacity tokens and gains perSec tokens a second. It
// returns ok when it took one; otherwise wait is how long until the bucket
// has one (by the database clock), and nothing changed. Errors are the
// database's (ctx bounds the call).
func (db *DB) RateTake(ctx context.Context, key string, capacity, perSec float64) (ok bool, wait time.Duration, err error) {
	perUs := perSec / 1e6
	q := db.q("INSERT INTO rate_buckets (key, tokens, updated_us) VALUES (?, CAST(? AS DOUBLE PRECISION), " + db.nowMicros() + ")" +
		" ON CONFLICT (key) DO UPDATE SET tokens = " + db.refilled() + " - 1, updated_us = excluded.updated_us" +
		" WHERE " + db.refilled() + " >= 1" +
		" RETURNING tokens")
	var left float64
	err = db.sql.QueryRowContext(ctx, q, key, capacity-1, capacity, perUs, capacity, perUs).Scan(&left)
	switch {
	case err == nil:
		return true, 0, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, 0, err
	}
	// Refused: the guarded update changed nothing. When does a token come?
	var tokens float64
	var updated, now int64
	err = db.sql.QueryRowContext(ctx, db.q("SELECT tokens, updated_us, "+db.nowMicros()+" FROM rate_buckets WHERE key = ?"), key).
		Scan(&tokens, &updated, &now)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	return false, rateWait(tokens, now-updated, capacity, perSec), nil
}

// rateWait is how long a bucket with tokens at updated, elapsedUs ago, waits
// for one token.
func rateWait(tokens float64, elapsedUs int64, capacity, perSec float64) time.Duration {
	if perSec <= 0 {
		return time.Duration(math.MaxInt64)
	}
	have := min(capacity, tokens+float64(max(0, elapsedUs))*perSec/1e6)
	if have >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - have) / perSec * 1e9))
}

// RateGive puts back one token taken from the bucket key (up to its
// capacity): a call that took from some of its buckets and was refused by
// another gives back what it took.
func (db *DB) RateGive(ctx context.Context, key string, capacity float64) error {
	_, err := db.sql.ExecContext(ctx, db.q("UPDATE rate_buckets SET tokens = "+db.least()+"(CAST(? AS DOUBLE PRECISION), tokens + 1) WHERE key = ?"), capacity, key)
	return err
}

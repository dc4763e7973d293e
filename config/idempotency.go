package config

import (
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultIdempotencyTTL is the default of [store] idempotency_ttl.
const DefaultIdempotencyTTL = 24 * time.Hour

// IdemTTL returns [store] idempotency_ttl: how long a stored idempotent
// result is replayed (default DefaultIdempotencyTTL).
func (s *Store) IdemTTL() time.Duration {
	if s.IdempotencyTTL <= 0 {
		return DefaultIdempotencyTTL
	}
	return s.IdempotencyTTL.Std()
}

// validateIdempotency checks [store] idempotency_ttl: a positive duration
// ("24h", "7d"). [tools.NAME] idempotent is a bool: TOML checks it.
func (l *loader) validateIdempotency(s *Store) {
	if key := (toml.Key{"store", "idempotency_ttl"}); (l.isSet(key) || s.IdempotencyTTL != 0) && s.IdempotencyTTL <= 0 {
		l.errorf(key, "%v is not positive: give how long a result is replayed (like \"24h\"), or remove the key for the default (24h)", s.IdempotencyTTL.Std())
	}
}

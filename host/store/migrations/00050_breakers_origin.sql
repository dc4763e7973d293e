-- Circuit breaker state shared by replicas (host/store/breakers.go): when
-- an open circuit's open period ends (database clock), and which toolhost
-- process opened it (its replica name and instance), so that status can
-- say where an open state came from and a process skips its own rows.

-- +goose Up
ALTER TABLE breakers ADD COLUMN until_us BIGINT;
ALTER TABLE breakers ADD COLUMN origin TEXT NOT NULL DEFAULT '';
CREATE INDEX breakers_until ON breakers (until_us);

-- +goose Down
DROP INDEX breakers_until;
ALTER TABLE breakers DROP COLUMN origin;
ALTER TABLE breakers DROP COLUMN until_us;

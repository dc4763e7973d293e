-- idempotency.tool: the catalogue tool a key was first used for, so that a
-- key reused for another tool is refused naming it (host/store/idempotency.go).
-- The table's key is scoped by the caller only; tool and args_hash are what a
-- reuse must match.

-- +goose Up
ALTER TABLE idempotency ADD COLUMN tool TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE idempotency DROP COLUMN tool;

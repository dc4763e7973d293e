-- The schema of toolhost's store (host/store), one for both engines: SQLite
-- and PostgreSQL. Portable SQL only: TEXT, BIGINT, INTEGER, DOUBLE PRECISION;
-- times are BIGINT microseconds since the Unix epoch (UTC), written by the
-- database's clock where replicas must agree (grants, buckets, breakers).
-- A later change is a new numbered file; a file that has been released is
-- never edited.

-- +goose Up

-- audit: one row per audit record (host.AuditRecord), written in batches
-- off the call's path. record is the whole record as JSON (what
-- `toolhost audit --json` prints); the columns are what queries filter on.
CREATE TABLE audit (
    id             TEXT PRIMARY KEY,         -- random, 32 hex digits
    time_us        BIGINT NOT NULL,          -- the record's Time
    correlation_id TEXT NOT NULL DEFAULT '',
    client         TEXT NOT NULL DEFAULT '',
    profile        TEXT NOT NULL DEFAULT '',
    op             TEXT NOT NULL DEFAULT '', -- "" for tools/call
    backend        TEXT NOT NULL DEFAULT '',
    tool           TEXT NOT NULL DEFAULT '',
    decision       TEXT NOT NULL DEFAULT '',
    outcome        TEXT NOT NULL DEFAULT '',
    attempts       INTEGER NOT NULL DEFAULT 0,
    latency_ms     DOUBLE PRECISION NOT NULL DEFAULT 0,
    args_hmac      TEXT NOT NULL DEFAULT '',
    trace_id       TEXT NOT NULL DEFAULT '',
    replica        TEXT NOT NULL DEFAULT '', -- the toolhost process that wrote it
    record         TEXT NOT NULL             -- the AuditRecord as JSON
);
CREATE INDEX audit_time ON audit (time_us);
CREATE INDEX audit_tool_time ON audit (tool, time_us);
CREATE INDEX audit_client_time ON audit (client, time_us);
CREATE INDEX audit_correlation ON audit (correlation_id);

-- grants: a subject (a client or a profile) may call a tool (a catalogue
-- name or glob) until expires_us, uses_left more times (NULL: any number).
CREATE TABLE grants (
    id           TEXT PRIMARY KEY,           -- random, 16 hex digits
    subject_kind TEXT NOT NULL,              -- 'client' or 'profile'
    subject      TEXT NOT NULL,
    tool         TEXT NOT NULL,
    created_us   BIGINT NOT NULL,            -- database clock
    expires_us   BIGINT NOT NULL,            -- database clock
    uses_left    INTEGER,                    -- NULL: unlimited
    created_by   TEXT NOT NULL DEFAULT '',
    reason       TEXT NOT NULL DEFAULT '',
    revoked_us   BIGINT                      -- NULL: not revoked
);
CREATE INDEX grants_subject ON grants (subject_kind, subject, tool);

-- rate_buckets: token buckets shared by replicas (one row per limit key).
CREATE TABLE rate_buckets (
    key        TEXT PRIMARY KEY,
    tokens     DOUBLE PRECISION NOT NULL,
    updated_us BIGINT NOT NULL               -- database clock
);

-- idempotency: the first completed result of a call made with a key.
CREATE TABLE idempotency (
    key        TEXT PRIMARY KEY,             -- scope (client/profile) + tool + the caller's key
    args_hash  TEXT NOT NULL,
    state      TEXT NOT NULL,                -- 'running' or 'done'
    result     TEXT,                         -- the CallToolResult as JSON, once done
    owner      TEXT NOT NULL DEFAULT '',     -- the replica running it
    created_us BIGINT NOT NULL,
    expires_us BIGINT NOT NULL
);
CREATE INDEX idempotency_expires ON idempotency (expires_us);

-- tool_pins: the approved definition of each catalogue tool, and a changed
-- one waiting for approval.
CREATE TABLE tool_pins (
    tool               TEXT PRIMARY KEY,     -- catalogue name
    backend            TEXT NOT NULL,
    hash               TEXT NOT NULL,        -- sha256 of the canonical definition
    definition         TEXT NOT NULL,        -- the approved mcp.Tool as canonical JSON
    approved_us        BIGINT NOT NULL,
    approved_by        TEXT NOT NULL DEFAULT '',
    pending_hash       TEXT,                 -- NULL: none waiting
    pending_definition TEXT,
    pending_since_us   BIGINT
);

-- breakers: circuit breaker state shared by replicas and kept across
-- restarts (one row per breaker: a backend's or a tool's).
CREATE TABLE breakers (
    name       TEXT PRIMARY KEY,
    state      TEXT NOT NULL,                -- 'closed', 'open', 'half-open'
    failures   INTEGER NOT NULL DEFAULT 0,
    opened_us  BIGINT,                       -- database clock; NULL unless open
    updated_us BIGINT NOT NULL
);

-- +goose Down
DROP TABLE breakers;
DROP TABLE tool_pins;
DROP TABLE idempotency;
DROP TABLE rate_buckets;
DROP TABLE grants;
DROP TABLE audit;

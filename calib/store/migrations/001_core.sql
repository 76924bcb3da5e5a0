-- The core store: sessions, calls with raw and normalised usage, parts in conversation order,
-- and the files ingested (for re-ingest and incremental ingest).
CREATE TABLE sessions (
    session_uid  VARCHAR PRIMARY KEY,
    tool         VARCHAR NOT NULL,
    native_id    VARCHAR NOT NULL,
    source_path  VARCHAR NOT NULL,
    layout       VARCHAR NOT NULL,
    project      VARCHAR,
    title        VARCHAR,
    started_at   TIMESTAMP,
    ended_at     TIMESTAMP,
    parent_uid   VARCHAR,
    is_subagent  BOOLEAN NOT NULL DEFAULT FALSE,
    meta         JSON
);

CREATE TABLE calls (
    call_uid      VARCHAR PRIMARY KEY,
    session_uid   VARCHAR NOT NULL,
    seq           INTEGER NOT NULL,
    message_id    VARCHAR,
    ts            TIMESTAMP,
    provider      VARCHAR,
    model         VARCHAR,
    usage_style   VARCHAR NOT NULL,
    usage_status  VARCHAR NOT NULL,
    input         BIGINT,
    output        BIGINT,
    reasoning     BIGINT,
    cache_read    BIGINT,
    cache_write   BIGINT,
    tool_prompt   BIGINT,
    total         BIGINT,
    usage_raw     JSON,
    ctx           BIGINT,
    carry         BIGINT,
    prompt_start  INTEGER NOT NULL,
    prompt_end    INTEGER NOT NULL,
    error         VARCHAR,
    finish        VARCHAR
);

CREATE TABLE parts (
    part_uid     VARCHAR PRIMARY KEY,
    session_uid  VARCHAR NOT NULL,
    seq          INTEGER NOT NULL,
    message_id   VARCHAR,
    role         VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    text         VARCHAR NOT NULL,
    tool_name    VARCHAR,
    call_uid     VARCHAR,
    ts           TIMESTAMP,
    resent       BOOLEAN NOT NULL DEFAULT TRUE,
    pruned_at    TIMESTAMP,
    pruned_text  VARCHAR
);

CREATE TABLE agent_estimates (
    source_path  VARCHAR NOT NULL,
    line         INTEGER NOT NULL,
    session_uid  VARCHAR,
    agent        VARCHAR,
    ts           TIMESTAMP,
    estimated    BIGINT NOT NULL,
    actual       BIGINT NOT NULL,
    PRIMARY KEY (source_path, line)
);

CREATE TABLE files (
    path          VARCHAR PRIMARY KEY,
    importer      VARCHAR NOT NULL,
    size          BIGINT NOT NULL,
    mtime_ns      BIGINT NOT NULL,
    fingerprint   VARCHAR NOT NULL,
    session_uids  VARCHAR[] NOT NULL,
    read_offset   BIGINT,
    ingested_at   TIMESTAMP NOT NULL
);

-- delta[k] = ctx[k] - ctx[k-1] - carry[k-1] within a session; chain breaks are judged by calib.score.
CREATE VIEW call_deltas AS
SELECT
    c.*,
    c.ctx - lag(c.ctx) OVER w - lag(c.carry) OVER w AS delta
FROM calls c
WINDOW w AS (PARTITION BY c.session_uid ORDER BY c.seq);

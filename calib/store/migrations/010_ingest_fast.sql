-- Faster ingest: calls and parts lose their PRIMARY KEY indexes (an ART index over a million string
-- keys made each insert several times slower). Natural-key idempotence is kept by the store instead:
-- a write replaces its sessions' rows in one transaction and rejects duplicate uids within a write.
-- The tables are rebuilt from `SELECT *` so that columns added by earlier migrations are kept.
CREATE TABLE calls_010 AS SELECT * FROM calls;
DROP TABLE calls;
ALTER TABLE calls_010 RENAME TO calls;
ALTER TABLE calls ALTER COLUMN call_uid SET NOT NULL;
ALTER TABLE calls ALTER COLUMN session_uid SET NOT NULL;
ALTER TABLE calls ALTER COLUMN seq SET NOT NULL;
ALTER TABLE calls ALTER COLUMN usage_style SET NOT NULL;
ALTER TABLE calls ALTER COLUMN usage_status SET NOT NULL;
ALTER TABLE calls ALTER COLUMN prompt_start SET NOT NULL;
ALTER TABLE calls ALTER COLUMN prompt_end SET NOT NULL;

CREATE TABLE parts_010 AS SELECT * FROM parts;
DROP TABLE parts;
ALTER TABLE parts_010 RENAME TO parts;
ALTER TABLE parts ALTER COLUMN part_uid SET NOT NULL;
ALTER TABLE parts ALTER COLUMN session_uid SET NOT NULL;
ALTER TABLE parts ALTER COLUMN seq SET NOT NULL;
ALTER TABLE parts ALTER COLUMN role SET NOT NULL;
ALTER TABLE parts ALTER COLUMN kind SET NOT NULL;
ALTER TABLE parts ALTER COLUMN text SET NOT NULL;
ALTER TABLE parts ALTER COLUMN resent SET NOT NULL;
ALTER TABLE parts ALTER COLUMN resent SET DEFAULT TRUE;

-- What an importer needs to continue reading an append-only log from `read_offset` (JSON, importer-owned).
ALTER TABLE files ADD COLUMN resume JSON;

-- The count cache is keyed by text, not by part: a text is counted once per count source however many
-- parts hold it (the same file read again, a system reminder repeated, a session resumed or copied),
-- and the count outlives the part (a session ingested again, with new part rows, counts nothing new).
-- `parts.text_hash` is hash(text, pruned_text), computed when the part is written; `text_counts` holds
-- one row per (source, text_hash) with the source's version (a different version makes the source's
-- rows stale). `part_estimates` stays as the view every reader joins: each part with its text's counts.
ALTER TABLE parts ADD COLUMN text_hash UBIGINT;
UPDATE parts SET text_hash = hash(text, pruned_text);

CREATE TABLE text_counts (
    source         VARCHAR NOT NULL,
    -- the source's version when counted
    version        VARCHAR NOT NULL,
    text_hash      UBIGINT NOT NULL,
    tokens         BIGINT NOT NULL,
    pruned_tokens  BIGINT
);

-- Counts kept from the part-keyed cache: a row whose part still holds the text it was counted on.
INSERT INTO text_counts
SELECT DISTINCT ON (e.source, e.text_hash) e.source, e.version, e.text_hash, e.tokens, e.pruned_tokens
FROM part_estimates e SEMI JOIN parts p ON p.part_uid = e.part_uid AND p.text_hash = e.text_hash;

DROP TABLE part_estimates;

CREATE VIEW part_estimates AS
SELECT c.source, p.part_uid, c.version, c.text_hash, c.tokens, c.pruned_tokens
FROM parts p JOIN text_counts c ON c.text_hash = p.text_hash;

-- The appended parts carry their text hash, so that readers join their counts without going back to
-- `parts`.
DROP VIEW appended_parts;
CREATE VIEW appended_parts AS
SELECT
    ch.call_uid,
    ch.session_uid,
    p.part_uid,
    p.seq,
    p.role,
    p.kind,
    p.tool_name,
    p.call_uid IS NULL AS is_input,
    (p.call_uid IS NULL OR ch.prev_placeholder) AS framed,
    (p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts) AS use_pruned,
    CASE WHEN p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts
         THEN coalesce(p.pruned_text, '') ELSE p.text END AS sent_text,
    p.text_hash
FROM call_chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.seq >= ch.prev_end AND p.seq < ch.prompt_end
WHERE ch.prev_uid IS NOT NULL AND p.resent
  AND (p.call_uid IS DISTINCT FROM ch.prev_uid OR ch.prev_placeholder);

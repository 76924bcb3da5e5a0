-- Per-part token counts, computed once per count source and reused by every later `calib score`.
-- A source is an estimator's registry name (`chars4`, `tiktoken:o200k_base`) or a character-class
-- count (`class:<name>`) that the charclass calibration is fitted on. Calibrated estimators are never
-- stored: they are applied on top of their base's counts at scoring time.
-- (source, part_uid) is unique, but kept so by calib.score.update_estimates (it deletes before it
-- inserts) rather than by a primary key: DuckDB's index makes bulk inserts of millions of rows slow.
CREATE TABLE part_estimates (
    source         VARCHAR NOT NULL,
    part_uid       VARCHAR NOT NULL,
    -- the source's version when counted: a different version makes every row of the source stale
    version        VARCHAR NOT NULL,
    -- hash(text, pruned_text) when counted: a different hash marks the row stale (the part was rewritten)
    text_hash      UBIGINT NOT NULL,
    tokens         BIGINT NOT NULL,
    pruned_tokens  BIGINT
);

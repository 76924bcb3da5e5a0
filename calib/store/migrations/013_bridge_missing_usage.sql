-- A call whose usage was lost (gemini-cli retried or invalid streams, an aborted step) no longer ends
-- the chain: the call after it is measured from the last call before it that has usage, as an agent
-- showing `/context` would do. `prev_*` then describe that call (the anchor), `bridged` counts the
-- calls skipped, and the skipped calls' own output parts, which no carried count covers, are appended
-- like any other text (model output, so not framed as a message: gemini-cli's model turns carry no
-- framing of their own beyond what their count held).
-- With no earlier call that has usage, the previous call stays the anchor and the chain breaks as
-- before (`missing_usage`).
DROP VIEW call_deltas;
DROP VIEW appended_parts;
DROP VIEW call_chain;

CREATE VIEW call_chain AS
WITH marked AS (
    SELECT
        c.*,
        lag(c.seq) OVER w AS imm_seq,
        lag(c.usage_status = 'ok' AND c.ctx IS NOT NULL) OVER w AS imm_usable,
        max(CASE WHEN c.usage_status = 'ok' AND c.ctx IS NOT NULL THEN c.seq END)
            OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS usable_seq
    FROM calls c
    WINDOW w AS (PARTITION BY c.session_uid ORDER BY c.seq)
),
anchored AS (
    SELECT
        m.* EXCLUDE (imm_usable, usable_seq),
        CASE WHEN m.imm_usable OR m.usable_seq IS NULL THEN m.imm_seq ELSE m.usable_seq END AS anchor_seq
    FROM marked m
)
SELECT
    a.* EXCLUDE (imm_seq, anchor_seq),
    p.call_uid AS prev_uid,
    p.ctx AS prev_ctx,
    CASE WHEN p.output_placeholder THEN 0 ELSE p.carry END AS prev_carry,
    p.prompt_start AS prev_start,
    p.prompt_end AS prev_end,
    p.ts AS prev_ts,
    p.provider AS prev_provider,
    p.model AS prev_model,
    p.usage_status AS prev_status,
    p.error AS prev_error,
    coalesce(p.output_placeholder, FALSE) AS prev_placeholder,
    coalesce(a.imm_seq - a.anchor_seq, 0)::INTEGER AS bridged,
    a.ctx - p.ctx - CASE WHEN p.output_placeholder THEN 0 ELSE p.carry END AS delta
FROM anchored a
LEFT JOIN calls p ON p.session_uid = a.session_uid AND p.seq = a.anchor_seq;

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
         THEN coalesce(p.pruned_text, '') ELSE p.text END AS sent_text
FROM call_chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.seq >= ch.prev_end AND p.seq < ch.prompt_end
WHERE ch.prev_uid IS NOT NULL AND p.resent
  AND (p.call_uid IS DISTINCT FROM ch.prev_uid OR ch.prev_placeholder);

CREATE VIEW call_deltas AS
SELECT * EXCLUDE (prev_uid, prev_ctx, prev_carry, prev_start, prev_end, prev_ts, prev_provider,
                  prev_model, prev_status, prev_error, prev_placeholder, bridged)
FROM call_chain;

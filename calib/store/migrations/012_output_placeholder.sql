-- Calls whose recorded output count is a streaming placeholder (Claude Code 2.0.x-2.1.6x wrote 1..~30
-- on every line of a call and never the final count). Such a call keeps `carry` NULL; the chain then
-- takes what it carried into the next prompt from its own output parts, estimated like any appended
-- text, instead of from a count that was never recorded.
ALTER TABLE calls ADD COLUMN output_placeholder BOOLEAN DEFAULT FALSE;
UPDATE calls SET output_placeholder = FALSE WHERE output_placeholder IS NULL;

-- The views of 011 again, with the placeholder rule: after such a call `prev_carry` is 0 and the call's
-- own re-sent output parts count among the parts appended before the next call. `framed` marks the
-- appended parts that bring framing of their own into the prompt, which a per-message overhead
-- prices: input parts, and after a placeholder the previous call's output blocks (whose framing the
-- unrecorded output count would have covered).
DROP VIEW call_deltas;
DROP VIEW appended_parts;
DROP VIEW call_chain;

CREATE VIEW call_chain AS
SELECT
    c.*,
    lag(c.call_uid) OVER w AS prev_uid,
    lag(c.ctx) OVER w AS prev_ctx,
    CASE WHEN lag(c.output_placeholder) OVER w THEN 0 ELSE lag(c.carry) OVER w END AS prev_carry,
    lag(c.prompt_start) OVER w AS prev_start,
    lag(c.prompt_end) OVER w AS prev_end,
    lag(c.ts) OVER w AS prev_ts,
    lag(c.provider) OVER w AS prev_provider,
    lag(c.model) OVER w AS prev_model,
    lag(c.usage_status) OVER w AS prev_status,
    lag(c.error) OVER w AS prev_error,
    coalesce(lag(c.output_placeholder) OVER w, FALSE) AS prev_placeholder,
    c.ctx - lag(c.ctx) OVER w
        - CASE WHEN lag(c.output_placeholder) OVER w THEN 0 ELSE lag(c.carry) OVER w END AS delta
FROM calls c
WINDOW w AS (PARTITION BY c.session_uid ORDER BY c.seq);

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
                  prev_model, prev_status, prev_error, prev_placeholder)
FROM call_chain;

-- The quantities of the design, defined once for every reader (scoring, the report, replay, notebooks).
--
-- call_chain: each call beside the call before it in its session (the prev_* columns), and
--   delta[k] = ctx[k] - ctx[k-1] - carry[k-1], the tokens the provider counted for what was appended
--   between the two calls. Whether the chain holds between them is judged by calib.scoring.
-- appended_parts: the parts appended between call k-1 and call k, i.e. those with
--   prompt_end[k-1] <= seq < prompt_end[k] that the agent sends (resent) and that call k-1 did not
--   produce itself (its output is carry[k-1]); `sent_text` is the text as sent at call k's time (the
--   placeholder of a part pruned by then), `is_input` marks the agent's input (a "message").
CREATE VIEW call_chain AS
SELECT
    c.*,
    lag(c.call_uid) OVER w AS prev_uid,
    lag(c.ctx) OVER w AS prev_ctx,
    lag(c.carry) OVER w AS prev_carry,
    lag(c.prompt_start) OVER w AS prev_start,
    lag(c.prompt_end) OVER w AS prev_end,
    lag(c.ts) OVER w AS prev_ts,
    lag(c.provider) OVER w AS prev_provider,
    lag(c.model) OVER w AS prev_model,
    lag(c.usage_status) OVER w AS prev_status,
    lag(c.error) OVER w AS prev_error,
    c.ctx - lag(c.ctx) OVER w - lag(c.carry) OVER w AS delta
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
    (p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts) AS use_pruned,
    CASE WHEN p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts
         THEN coalesce(p.pruned_text, '') ELSE p.text END AS sent_text
FROM call_chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.seq >= ch.prev_end AND p.seq < ch.prompt_end
WHERE ch.prev_uid IS NOT NULL AND p.resent AND p.call_uid IS DISTINCT FROM ch.prev_uid;

-- call_deltas (what Store.calls reads) keeps its columns: the calls and their delta, from call_chain.
DROP VIEW call_deltas;
CREATE VIEW call_deltas AS
SELECT * EXCLUDE (prev_uid, prev_ctx, prev_carry, prev_start, prev_end, prev_ts, prev_provider,
                  prev_model, prev_status, prev_error)
FROM call_chain;

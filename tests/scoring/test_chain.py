from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest
from scoring.sessions import T0, basic, break_chain, chain

from calib.scoring.chain import (
    BREAK_REASONS,
    CHAIN_COLUMNS,
    FeatureTable,
    appended_parts_sql,
    feature_batches,
    feature_column,
    features,
    is_holdout,
)
from calib.store.store import Store


def test_frame_by_hand(store: Store) -> None:
    store.write([basic()])
    frame = features(store, ["chars4"])
    assert frame.columns == [
        *CHAIN_COLUMNS,
        *(feature_column("a", "chars4", g) for g in ("model", "tool", "user")),
        *(feature_column("r", "chars4", g) for g in ("model", "tool", "user")),
        *(feature_column("f", "chars4", g) for g in ("model", "tool", "user")),
    ]
    assert frame["status"].to_list() == ["baseline", "ok", "ok"]
    assert frame["family"].to_list() == ["full", "incremental", "incremental"]
    assert frame["removal"].to_list() == [None, None, None]
    assert frame["delta"].to_list() == [None, 160, 30]
    # call 1 gets the two tool results; what call 0 produced (p1, p3) is its carry, not appended
    assert frame["parts"].to_list() == [0, 2, 1]
    assert frame["messages"].to_list() == [0, 2, 1]
    assert frame["a|chars4|tool"].to_list() == [0.0, 150.0, 0.0]
    assert frame["a|chars4|user"].to_list() == [0.0, 0.0, 25.0]
    assert frame["a|chars4|model"].to_list() == [0.0, 0.0, 0.0]
    # the full prompt of call 1: p0 (user), p1 + p3 (model; the reasoning part was never re-sent), p4 + p5
    assert frame.row(1, named=True)["f|chars4|model"] == 22.0
    assert frame.row(1, named=True)["f|chars4|tool"] == 150.0
    assert frame["full_messages"].to_list() == [1, 3, 4]


def test_frame_agrees_with_the_store_views(store: Store) -> None:
    store.write([basic(), chain("t:a"), chain("t:b", subagent=True)])
    frame = features(store, ["chars4"])
    chained = store.query("SELECT call_uid, delta, prev_ctx, prev_carry FROM call_chain")
    joined = frame.join(chained, on="call_uid", suffix="_view")
    for column in ("delta", "prev_ctx", "prev_carry"):
        assert joined[column].equals(joined[f"{column}_view"])
    appended = store.query(
        "SELECT call_uid, count(*) AS n, count(*) FILTER (WHERE is_input) AS m FROM appended_parts GROUP BY ALL"
    )
    joined = frame.join(appended, on="call_uid", how="left").with_columns(pl.col("n", "m").fill_null(0))
    assert joined["parts"].to_list() == joined["n"].to_list()
    assert joined["messages"].to_list() == joined["m"].to_list()
    # the working tables are dropped again
    temp = store.query("SELECT table_name FROM duckdb_tables() WHERE temporary")
    assert temp.is_empty()


def test_appended_parts_sql_gives_the_rows_of_the_view(store: Store) -> None:
    sessions = [basic(), chain("t:a"), chain("t:b", subagent=True)]
    for reason in BREAK_REASONS:
        session = chain(f"t:{reason}")
        break_chain(reason, session)
        sessions.append(session)
    placeholder = chain("t:placeholder")
    placeholder.calls[1].output_placeholder = True
    sessions.append(placeholder)
    store.write(sessions)
    columns = "call_uid, session_uid, part_uid, seq, role, kind, tool_name, is_input, framed, use_pruned, "
    columns += "sent_text, text_hash"
    view = store.query(f"SELECT {columns} FROM appended_parts ORDER BY ALL")
    linear = store.query(f"SELECT {columns} FROM ({appended_parts_sql('IS NOT NULL')}) ORDER BY ALL")
    assert view.height > 20
    assert linear.equals(view)
    scoped = appended_parts_sql("BETWEEN 't:a' AND 't:b'")
    some = store.query(f"SELECT {columns} FROM ({scoped}) ORDER BY ALL")
    assert some.equals(view.filter(pl.col("session_uid").is_in(["t:a", "t:b"])))


def test_frame_without_sources_has_the_chain_columns_only(store: Store) -> None:
    store.write([chain("t:plain")])
    frame = features(store)
    assert frame.columns == list(CHAIN_COLUMNS)
    assert store.query("SELECT count(*) AS n FROM part_estimates")["n"][0] == 0


@pytest.mark.parametrize("reason", [*BREAK_REASONS, "compaction_summary"])
def test_each_chain_break_is_detected(store: Store, reason: str) -> None:
    session = chain(f"t:{reason}")
    break_chain(reason, session)
    store.write([session])
    frame = features(store)
    assert frame["status"].to_list() == ["baseline", "ok", "break"]
    assert frame["reason"].to_list() == [None, None, reason.removesuffix("_summary")]


def test_a_call_after_an_unlogged_turn_is_in_no_family(store: Store) -> None:
    # a gemini-cli sub-agent before 0.37: each model turn's tool call and result are not recorded, so the
    # next call finds nothing appended after an output it carries, however much the context grew
    session = chain("t:sub", subagent=True)
    break_chain("unlogged_turn", session)
    session.calls[2].ctx = (session.calls[2].ctx or 0) + 40  # a small tool result, under any threshold
    store.write([session])
    frame = features(store)
    assert frame["reason"].to_list() == [None, None, "unlogged_turn"]
    # no estimate from the log can be judged there: it is neither scored nor in the end-to-end figures
    assert frame["family"].to_list() == ["full", "incremental", None]


def test_a_call_with_nothing_appended_after_an_uncarried_output_holds(store: Store) -> None:
    # the model answered nothing the next prompt carries and the agent re-sent the same prompt (a retry)
    session = chain("t:retry")
    break_chain("unlogged_turn", session)
    session.calls[1].carry = session.calls[1].output = 0
    session.calls[2].ctx = session.calls[1].ctx
    store.write([session])
    frame = features(store)
    assert frame["reason"].to_list() == [None, None, None]
    assert frame["family"].to_list() == ["full", "incremental", "incremental"]


def test_first_call_without_usage_is_a_break(store: Store) -> None:
    session = chain("t:first")
    session.calls[0].usage_status = "missing"
    store.write([session])
    frame = features(store)
    assert frame["status"].to_list() == ["break", "break", "ok"]
    assert frame["reason"].to_list() == ["missing_usage", "missing_usage", None]


def test_pruned_text_counts_once_pruned(store: Store) -> None:
    session = chain("t:prune")
    # pruned before call 1: call 0 saw the text, calls 1 and 2 the placeholder
    session.parts[0].pruned_at = T0 + timedelta(seconds=30)
    session.parts[0].pruned_text = "[cleared]" * 4  # 36 chars: 9 tokens
    store.write([session])
    frame = features(store, ["chars4"])
    # the pruning is placed between calls 0 and 1: a removal call 1 is scored with, not a break
    assert frame["reason"].to_list() == [None, None, None]
    assert frame["removal"].to_list() == [None, "pruned", None]
    # what left: the 10 tokens call 0 saw, net of the 9-token placeholder that replaced them
    assert frame["r|chars4|user"].to_list() == [0.0, 1.0, 0.0]
    assert frame["removed_known"].to_list() == [0, 0, 0]
    full = (frame["f|chars4|user"] + frame["f|chars4|model"]).to_list()
    assert full == [10.0, 9 + 10 + 10.0, 9 + 10 + 10 + 10 + 10.0]


def test_holdout_column_follows_the_split(store: Store) -> None:
    store.write([chain(f"t:h{i}") for i in range(20)])
    frame = features(store, holdout_fraction=0.5)
    expected = [is_holdout(uid, 0.5) for uid in frame["session_uid"]]
    assert frame["holdout"].to_list() == expected
    assert 0 < sum(expected) < len(expected)


def test_holdout_split_is_stable_and_near_its_fraction() -> None:
    uids = [f"gemini-cli:{i}" for i in range(4000)]
    held = [u for u in uids if is_holdout(u, 0.2)]
    assert held == [u for u in uids if is_holdout(u, 0.2)]
    assert 0.17 < len(held) / len(uids) < 0.23
    assert not any(is_holdout(u, 0.0) for u in uids)


def test_a_placeholder_output_is_taken_from_its_parts_not_from_the_count(store: Store) -> None:
    # Call 0 recorded a placeholder output (3 tokens) for 20 + 2 tokens of text and tool call: its carry
    # is unknown, so the chain counts call 0's output parts among what call 1 was appended.
    session = basic("t:ph")
    first = session.calls[0]
    first.output, first.carry, first.output_placeholder = 3, None, True
    store.write([session])
    frame = features(store, ["chars4"])
    after = frame.row(1, named=True)
    assert (after["status"], after["after_placeholder"], after["prev_carry"]) == ("ok", True, 0)
    assert after["delta"] == 160 + 20  # ctx[1] - ctx[0]: the output is no longer subtracted
    # p1 (20) and p3 (2) come in as model text beside the two tool results; the reasoning was never sent,
    # and each of those two output blocks is framed in the prompt as a message would be
    assert (after["parts"], after["messages"]) == (4, 4)
    assert (after["a|chars4|model"], after["a|chars4|tool"]) == (22.0, 150.0)
    # the call after an ordinary one is unchanged
    assert frame.row(2, named=True)["after_placeholder"] is False
    assert frame.row(2, named=True)["a|chars4|model"] == 0.0


def test_pruning_the_previous_calls_own_output_is_a_removal(store: Store) -> None:
    # Call 1's own (carried) output part is pruned before call 2, so that text no longer re-enters the
    # prompt: it leaves as its own count (10 tokens) net of the empty placeholder.
    session = basic("t:own")
    session.parts[6].pruned_at = T0 + timedelta(minutes=1, seconds=30)
    session.parts[6].pruned_text = ""
    store.write([session])
    frame = features(store, ["chars4"])
    assert frame["reason"].to_list() == [None, None, None]
    assert frame["removal"].to_list() == [None, None, "pruned"]
    assert frame["r|chars4|model"].to_list() == [0.0, 0.0, 10.0]


def test_dropped_reasoning_leaves_with_its_reported_count(store: Store) -> None:
    # Codex drops a turn's reasoning when the next user turn starts; the call that produced it reported
    # its reasoning tokens (120 here), which is what leaves, whatever the length of the summary kept.
    session = basic("t:reason")
    session.parts[2].resent = True
    session.parts[2].pruned_at = T0 + timedelta(minutes=1, seconds=30)
    session.parts[2].pruned_text = ""
    session.calls[0].reasoning = 120
    session.calls[1].ctx = (session.calls[1].ctx or 0) + 120  # call 1 still held it
    session.calls[2].ctx = (session.calls[2].ctx or 0) + 120 - 120
    store.write([session])
    frame = features(store, ["chars4"])
    assert frame["removal"].to_list() == [None, None, "reasoning"]
    assert frame["removed_known"].to_list() == [0, 0, 120]
    assert frame["r|chars4|model"].to_list() == [0.0, 0.0, 0.0]  # the count replaces the text estimate
    assert frame["status"].to_list() == ["baseline", "ok", "ok"]


def test_a_drop_beyond_what_left_is_still_a_break(store: Store) -> None:
    session = basic("t:drop")
    session.parts[4].pruned_at = T0 + timedelta(minutes=1, seconds=30)
    session.parts[4].pruned_text = ""  # 100 tokens leave before call 2
    session.calls[2].ctx = (session.calls[1].ctx or 0) - 2000
    store.write([session])
    frame = features(store, ["chars4"])
    assert frame.row(2, named=True)["reason"] == "negative_delta"
    assert frame.row(2, named=True)["removal"] == "pruned"


def test_family_follows_what_the_log_shows_before_the_call(store: Store) -> None:
    store.write([chain("t:fam")])
    frame = features(store)
    assert frame["family"].to_list() == ["full", "incremental", "incremental"]
    for reason, family in [("compaction", "full"), ("model_change", "full"), ("masked", "incremental")]:
        session = chain(f"t:fam-{reason}")
        break_chain(reason, session)
        store.write([session])
        rows = features(store).filter(pl.col("session_uid") == f"t:fam-{reason}")
        assert rows["family"].to_list() == ["full", "incremental", family], reason
    session = chain("t:fam-nousage")
    session.calls[1].usage_status = "missing"
    store.write([session])
    rows = features(store).filter(pl.col("session_uid") == "t:fam-nousage")
    assert rows["family"].to_list() == ["full", None, "incremental"]


def test_a_call_whose_usage_was_lost_is_bridged(store: Store) -> None:
    # Call 1 lost its usage (a retried stream): call 2 builds on call 0, the last call with usage, and
    # what call 1 produced (no carried count covers it) is appended with call 2's own message.
    session = chain("t:bridge")
    session.calls[1].usage_status = "missing"
    session.calls[1].ctx = None
    store.write([session])
    frame = features(store, ["chars4"])
    assert frame["status"].to_list() == ["baseline", "break", "ok"]
    assert frame["reason"].to_list() == [None, "missing_usage", None]
    assert frame["bridged"].to_list() == [0, 0, 1]
    last = frame.row(2, named=True)
    assert (last["prev_ctx"], last["prev_carry"]) == (2000, 10)
    assert last["delta"] == 2044 - 2000 - 10  # two messages of 12 and call 1's carry of 10
    # u1 and u2 (10 tokens each, two messages) and call 1's output a1 (10 tokens of model text)
    assert (last["parts"], last["messages"]) == (3, 2)
    assert (last["a|chars4|user"], last["a|chars4|model"]) == (20.0, 10.0)
    # with no earlier call that has usage, the chain still breaks
    session = chain("t:nobridge")
    session.calls[0].usage_status = "missing"
    store.write([session])
    rows = features(store).filter(pl.col("session_uid") == "t:nobridge")
    assert rows["reason"].to_list() == ["missing_usage", "missing_usage", None]


def test_batches_of_sessions_give_the_frame_of_the_whole_store(store: Store) -> None:
    store.write([basic(f"t:b{k}") for k in range(5)])
    whole = features(store, ["chars4", "class:letters"])
    pieces = list(feature_batches(store, ["chars4", "class:letters"], batch_calls=4))
    # about 4 calls per batch: each batch holds whole sessions (3 calls each), so one session per batch
    assert [p.height for p in pieces] == [3] * 5
    assert pl.concat(pieces).equals(whole)
    with FeatureTable(store, ["chars4", "class:letters"], holdout_fraction=0.5) as table:
        held = pl.concat(list(table.batches(["chars4"], holdout=True, batch_calls=1)))
        assert table.count(True) == held.height > 0
        assert held.columns == [c for c in whole.columns if c.split("|")[1:2] != ["class:letters"]]
    split = features(store, ["chars4"], holdout_fraction=0.5)
    assert held.equals(split.filter(pl.col("holdout")))


def test_a_session_longer_than_a_batch_is_read_in_pieces_with_the_rows_of_the_whole(store: Store) -> None:
    sessions = [basic("t:b0"), chain("t:a")]
    for reason in BREAK_REASONS:
        session = chain(f"t:{reason}")
        break_chain(reason, session)
        sessions.append(session)
    store.write(sessions)
    whole = features(store, ["chars4", "class:letters"])
    pieces = list(feature_batches(store, ["chars4", "class:letters"], batch_calls=2))
    # every session has 3 calls: two batches each, of 2 calls and 1
    assert [p.height for p in pieces] == [2, 1] * len(sessions)
    assert pl.concat(pieces).equals(whole)
    temp = store.query("SELECT table_name FROM duckdb_tables() WHERE temporary")
    assert temp.is_empty()  # the running sums kept across a session's pieces are dropped after them

from __future__ import annotations

import itertools
import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from calib.analysis.batches import Spool
from calib.analysis.replay import (
    REPLAY_COLUMNS,
    SUMMARY_COLUMNS,
    TIMELINE_COLUMNS,
    pick_session,
    plan_windows,
    replay,
    replay_lines,
    replay_store,
    summarise_replay,
    timeline,
    unknown_models,
)
from calib.analysis.rules import OUTCOMES, RULE_NAMES, DextoRule, GeminiRule, OpenCodeRule, resolve_rules
from calib.analysis.windows import Window, fixed_windows
from calib.cli.app import app
from calib.core.errors import UsageError
from calib.core.records import Call, ParsedSession, Part, Session
from calib.ingest.pipeline import ingest
from calib.store.store import Store

T0 = datetime(2026, 2, 1, 10, 0, 0)
CJK = "中" * 80  # chars4 20 tokens, cjk 120; the provider is made to count 80


def _session(
    uid: str,
    calls: list[dict],
    *,
    model: str = "toy",
    provider: str = "google",
    style: str = "gemini",
) -> ParsedSession:
    """Call k is sent its input part (seq 2k, text `calls[k]["text"]`) and produces one output part
    (seq 2k+1); each dict gives the call's usage fields."""
    s = Session(uid, "test", uid, "/x", "test")
    parts: list[Part] = []
    records: list[Call] = []
    for k, spec in enumerate(calls):
        cuid = f"{uid}:c{k}"
        parts.append(Part(f"{uid}:in{k}", uid, 2 * k, "user", "user_text", spec.get("text", CJK)))
        parts.append(
            Part(f"{uid}:out{k}", uid, 2 * k + 1, "assistant", "assistant_text", "o" * 40, call_uid=cuid)
        )
        fields = {
            key: spec.get(key)
            for key in ("input", "output", "reasoning", "cache_read", "cache_write", "total", "ctx", "carry")
        }
        if fields["input"] is None:
            fields["input"] = fields["ctx"]
        records.append(
            Call(
                cuid,
                uid,
                k,
                0,
                2 * k + 1,
                spec.get("status", "ok"),
                style,  # type: ignore[arg-type]
                ts=T0 + timedelta(minutes=k),
                provider=provider,
                model=spec.get("model", model),
                **fields,
            )
        )
    return ParsedSession(s, records, parts)


def _growing(uid: str, n: int, start: int = 10_000, model: str = "toy") -> ParsedSession:
    """Each call appends one CJK message the provider counts as 80 tokens and returns 10 visible
    output tokens: ctx[k] = start + 90 k. chars4 predicts ctx[k] - 60, cjk ctx[k] + 40."""
    calls = [{"ctx": start + 90 * k, "output": 10, "carry": 10, "reasoning": 0} for k in range(n)]
    return _session(uid, calls, model=model)


def _rows(frame: pl.DataFrame, rule: str, estimator: str, policy: str = "raw") -> pl.DataFrame:
    return frame.filter(
        (pl.col("rule") == rule) & (pl.col("estimator") == estimator) & (pl.col("policy") == policy)
    ).sort("seq")


# -- early and late decisions on constructed crossings ------------------------------------------


@pytest.mark.parametrize("cross", [2, 3, 5])
def test_dexto_early_and_late_are_exactly_the_constructed_ones(store: Store, cross: int) -> None:
    n = cross + 3
    store.write([_growing("t:grow", n)])
    ctx = [10_000 + 90 * k for k in range(n)]
    # the threshold sits 30 tokens above ctx[cross-1]: the truth crosses it at `cross`; chars4 (60 low)
    # reaches it exactly (not above) there, cjk (40 high) passes it one call early
    limit = ctx[cross - 1] + 30
    window = math.ceil(limit / 0.9)
    assert DextoRule().limit(Window(window)) == limit
    frame = replay(store, ["chars4", "cjk"], ["dexto"], ["raw"], {"toy": window})
    chars4 = _rows(frame, "dexto", "chars4")
    cjk = _rows(frame, "dexto", "cjk")
    assert chars4["truth"].to_list() == ctx
    assert chars4["displayed"].to_list()[1:] == [c - 60 for c in ctx[1:]]
    assert cjk["displayed"].to_list()[1:] == [c + 40 for c in ctx[1:]]
    assert chars4["basis"].to_list() == ["full"] + ["chained"] * (n - 1)
    late = ["late" if k == cross else "ok" for k in range(n)]
    early = ["early" if k == cross - 1 else "ok" for k in range(n)]
    assert chars4["outcome"].to_list() == late
    assert cjk["outcome"].to_list() == early
    assert chars4.filter("fires")["seq"].to_list() == [cross + 1]
    assert cjk.filter("fires")["seq"].to_list() == [cross - 1]
    assert chars4["margin"].to_list() == [c - limit for c in ctx]
    summary = summarise_replay(frame).sort("estimator")
    rows = {r["estimator"]: r for r in summary.to_dicts()}
    assert (rows["chars4"]["early"], rows["chars4"]["late"], rows["chars4"]["missed"]) == (0, 1, 0)
    assert (rows["cjk"]["early"], rows["cjk"]["late"], rows["cjk"]["missed"]) == (1, 0, 0)
    assert rows["cjk"]["early_fires"] == 1 and rows["cjk"]["wasted_tokens"] == 30
    assert rows["chars4"]["wasted_tokens"] == 0
    assert rows["chars4"]["should"] == n - cross
    assert rows["chars4"]["compact"] == n - cross - 1 and rows["cjk"]["compact"] == n - cross + 1
    # displayed error over chained calls: chars4 is 60 low on every one, cjk 40 high
    assert rows["chars4"]["scored"] == n - 1
    assert rows["chars4"]["err_p50"] == 60 and rows["chars4"]["err_mean"] == -60
    assert rows["cjk"]["err_p90"] == 40 and rows["cjk"]["err_mean"] == 40


def test_cline_estimates_every_request_whole_and_qwen_code_chains_like_dexto(store: Store) -> None:
    n = 5
    store.write([_growing("t:grow", n)])
    frame = replay(store, ["chars4", "cjk"], ["cline", "qwen-code", "dexto"], ["raw"], {"toy": 20_000})
    for estimator in ("chars4", "cjk"):
        cline, qwen, dexto = (_rows(frame, r, estimator) for r in ("cline", "qwen-code", "dexto"))
        # Cline's SDK never reads a reported count: the whole request, estimated, on every call
        assert cline["basis"].to_list() == ["full"] * n
        shown = cline["displayed"].to_list()
        assert shown[0] == dexto["displayed"][0]  # the first call, where Dexto too estimates it whole
        steps = {b - a for a, b in itertools.pairwise(shown)}
        assert len(steps) == 1 and steps.pop() > 0  # each call adds the same estimated message
        assert shown[-1] < 1_000 < dexto["displayed"][-1]  # no system prompt: far below the truth
        # Qwen Code: the last prompt and output plus the new message's estimate, as Dexto shows it
        assert qwen["displayed"].to_list() == dexto["displayed"].to_list()
        assert qwen["threshold"][0] == pytest.approx(0.85 * 20_000)  # 20k - 33k is no ceiling
        assert dexto["threshold"][0] == 18_000


@pytest.mark.parametrize("cross", [1, 4])
def test_actual_based_rules_are_late_by_one_call_whatever_the_estimator(store: Store, cross: int) -> None:
    n = cross + 3
    store.write([_growing("t:grow", n)])
    ctx = [10_000 + 90 * k for k in range(n)]
    window = 20_000
    gemini = GeminiRule(threshold=(ctx[cross - 1] + 45) / window)
    usable = ctx[cross - 1] + 10 + 45  # between the counts after calls cross-1 and cross
    opencode = OpenCodeRule()
    frame = replay(
        store,
        ["chars4", "cjk"],
        [gemini, opencode],
        ["raw"],
        {"toy": {"context": usable + 100, "max_output": 100}},
    )
    frame_g = replay(store, ["chars4", "cjk"], [gemini], ["raw"], {"toy": window})
    expected = ["late" if k == cross else "ok" for k in range(n)]
    for estimator in ("chars4", "cjk"):
        g = _rows(frame_g, "gemini-cli", estimator)
        assert g["displayed"].to_list() == [0, *ctx[:-1]]  # lastPromptTokenCount, 0 at the start
        assert g["basis"].to_list() == ["none"] + ["actual"] * (n - 1)
        assert g["outcome"].to_list() == expected
        assert g.filter("fires")["seq"].to_list() == [cross + 1]
        o = _rows(frame, "opencode", estimator)
        assert o["threshold"].to_list() == [usable] * n
        assert o["truth"].to_list() == [c + 10 for c in ctx]  # ctx + carry
        assert o["displayed"].to_list() == [0, *(c + 10 for c in ctx[:-1])]
        assert o["outcome"].to_list() == expected


def test_gemini_guard_refuses_and_misses_per_estimator(store: Store) -> None:
    store.write([_growing("t:grow", 6)])
    ctx = [10_000 + 90 * k for k in range(6)]
    rule = GeminiRule(threshold=1.0)  # compress only at the window, so the guard decides
    # window 50 above ctx[2]: call 3 (ctx[2] + 90) does not fit; chars4 guesses +20, cjk +120
    frame = replay(store, ["chars4", "cjk"], [rule], ["raw"], {"toy": ctx[2] + 50})
    chars4, cjk = _rows(frame, "gemini-cli", "chars4"), _rows(frame, "gemini-cli", "cjk")
    assert chars4["guard"].to_list()[1:] == [c + 20 for c in ctx[:-1]]
    assert chars4["outcome"].to_list()[:4] == ["ok", "ok", "ok", "missed"]
    assert cjk["outcome"].to_list()[:4] == ["ok", "ok", "ok", "late"]  # refused a request that fails
    assert cjk["refuse"].to_list()[:4] == [False, False, False, True]
    assert chars4["over_window"].to_list()[3] and chars4["outcome"][4] == "ok"  # compresses at call 4
    # window 100 above ctx[2]: call 3 fits, cjk's guard refuses it anyway; call 4 does not fit
    frame = replay(store, ["chars4", "cjk"], [rule], ["raw"], {"toy": ctx[2] + 100})
    chars4, cjk = _rows(frame, "gemini-cli", "chars4"), _rows(frame, "gemini-cli", "cjk")
    assert cjk["outcome"].to_list()[:5] == ["ok", "ok", "ok", "refused", "late"]
    assert chars4["outcome"].to_list()[:5] == ["ok", "ok", "ok", "ok", "late"]
    summary = {r["estimator"]: r for r in summarise_replay(frame).to_dicts()}
    assert (summary["cjk"]["refused"], summary["chars4"]["refused"]) == (1, 0)


# -- reasoning and cache policies -----------------------------------------------------------------


def _reasoning_session(uid: str = "t:reason") -> ParsedSession:
    """Gemini-style usage: call 0 has 90k of prompt, 10k of visible output and 50k of thoughts (not
    re-sent), 80k of the prompt cached; call 1 appends 100 tokens."""
    return _session(
        uid,
        [
            {"ctx": 90_000, "output": 10_000, "reasoning": 50_000, "carry": 10_000, "cache_read": 80_000,
             "total": 150_000},
            {"ctx": 100_100, "output": 0, "reasoning": 0, "carry": 0, "total": 100_100, "text": "a" * 400},
        ],
    )  # fmt: skip


def test_effective_count_per_policy_by_hand(store: Store) -> None:
    store.write([_reasoning_session()])
    # usable = 182,000 - 32,000 = 150,000 for both OpenCode rules
    frame = replay(store, ["chars4"], None, None, {"toy": {"context": 182_000, "max_output": 32_000}})
    call1 = frame.filter(pl.col("seq") == 1)

    def shown(rule: str) -> dict[str, float]:
        rows = call1.filter(pl.col("rule") == rule)
        return dict(zip(rows["policy"].to_list(), rows["displayed"].to_list(), strict=True))

    # 100k of content (90k prompt + 10k output) and 50k of reasoning
    assert shown("opencode") == {
        "raw": 150_000,  # tokens.total counts the thoughts
        "include": 150_000,
        "strip-all-but-last": 150_000,
        "strip-all": 100_000,
        "ui-sum": 230_000,  # input + output + reasoning + cache read: the cache counted twice
    }
    assert shown("opencode-2025") == {
        "raw": 100_000,  # input + cache.read + output, with Gemini's input already holding the cache
        "include": 150_000,
        "strip-all-but-last": 150_000,
        "strip-all": 100_000,
        "ui-sum": 230_000,
    }
    assert shown("dexto") == {  # lastInput + lastOutput + estimate(new) (100)
        "raw": 100_100,
        "include": 150_100,
        "strip-all-but-last": 150_100,
        "strip-all": 100_100,
        "ui-sum": 230_100,
    }
    assert shown("gemini-cli")["raw"] == 90_000 and shown("gemini-cli")["include"] == 90_000
    opencode = call1.filter(pl.col("rule") == "opencode")
    decisions = dict(zip(opencode["policy"].to_list(), opencode["outcome"].to_list(), strict=True))
    # stripped shows 100k and does not compact under 150k; the raw 150k does (>=), and the truth
    # (100,100 sent, no output) says that was early
    assert decisions == {
        "raw": "early",
        "include": "early",
        "strip-all-but-last": "early",
        "strip-all": "ok",
        "ui-sum": "early",
    }
    assert opencode["truth"].to_list() == [100_100] * 5
    # the 2025 rule compares strictly: 150k is not over 150k
    assert not call1.filter((pl.col("rule") == "opencode-2025") & (pl.col("policy") == "include"))["compact"][
        0
    ]


def _resent_session(uid: str = "t:resent") -> ParsedSession:
    """OpenCode-style usage with reasoning re-sent: 100 visible + 50 reasoning re-enter each prompt,
    and each call appends 200 tokens. The last call changes model, which drops the reasoning."""
    calls = []
    ctx = 1_000
    for k in range(4):
        calls.append(
            {"ctx": ctx, "output": 100, "reasoning": 50, "carry": 150, "total": ctx + 150, "text": "a" * 800,
             "model": "toy" if k < 3 else "toy-2"}
        )  # fmt: skip
        ctx += 150 + 200
    return _session(uid, calls, provider="opencode", style="anthropic")


def test_resent_reasoning_is_part_of_the_content_it_is_stripped_from(store: Store) -> None:
    store.write([_resent_session()])
    windows = {"toy*": {"context": 100_000, "max_output": 1_000}}
    frame = replay(store, ["chars4"], ["opencode", "dexto"], None, windows)
    at2 = frame.filter(pl.col("seq") == 2)

    def shown(rule: str) -> dict[str, float]:
        rows = at2.filter(pl.col("rule") == rule)
        return dict(zip(rows["policy"].to_list(), rows["displayed"].to_list(), strict=True))

    # call 1: ctx 1350 holds call 0's 50 of reasoning, so its content is 1300
    assert shown("opencode") == {
        "raw": 1_500,  # total = input + output + reasoning
        "include": 1_500,  # 1300 + 100 visible + 50 + 50 of reasoning
        "strip-all-but-last": 1_450,
        "strip-all": 1_400,
        "ui-sum": 1_500,
    }
    assert shown("dexto")["raw"] == 1_350 + 100 + 200
    assert shown("dexto")["strip-all"] == 1_300 + 100 + 200
    truth = at2.filter(pl.col("rule") == "opencode")["truth"].to_list()
    assert truth == [1_700 + 150] * 5
    # the model change starts a new segment: no reasoning was carried into call 3's prompt
    at3 = frame.filter((pl.col("seq") == 3) & (pl.col("rule") == "opencode"))
    assert at3["status"][0] == "break" and at3["reason"][0] == "model_change"


# -- missing usage, unknown windows ---------------------------------------------------------------


def test_missing_usage_and_unknown_model(store: Store) -> None:
    calls = [
        {"ctx": 5_000, "output": 10, "carry": 10},
        {"ctx": None, "output": None, "carry": None, "status": "missing"},
        {"ctx": 5_300, "output": 10, "carry": 10},
    ]
    store.write([_session("t:gap", calls), _growing("t:other", 3, model="mystery-1")])
    frame = replay(store, ["chars4"], ["gemini-cli", "dexto"], ["raw"], {"toy": 20_000})
    gemini = frame.filter((pl.col("rule") == "gemini-cli") & (pl.col("session_uid") == "t:gap")).sort("seq")
    assert gemini["outcome"].to_list() == ["ok", "unknown", "ok"]
    assert gemini["displayed"].to_list() == [0, 5_000, 5_000]  # the last known prompt count carries on
    dexto = frame.filter((pl.col("rule") == "dexto") & (pl.col("session_uid") == "t:gap")).sort("seq")
    # Dexto keeps call 0's actuals and estimates everything appended since: in1, then call 1's output
    # (no count came back for it) and in2
    assert dexto["basis"].to_list() == ["full", "chained", "chained"]
    assert dexto["displayed"].to_list() == [20, 5_010 + 20, 5_010 + 20 + 10 + 20]
    other = frame.filter(pl.col("session_uid") == "t:other")
    assert set(other["outcome"].to_list()) == {"no_window"}
    assert unknown_models(frame) == ["mystery-1"]
    summary = summarise_replay(frame).filter(pl.col("rule") == "gemini-cli").to_dicts()[0]
    assert (summary["calls"], summary["unknown"], summary["no_window"]) == (2, 1, 3)


def test_counts_restart_after_a_recorded_compaction(store: Store) -> None:
    session = _growing("t:compact", 5)
    # a compaction before call 3 dropped the first two exchanges: prompts start at in2 (seq 4)
    for call in session.calls[3:]:
        call.prompt_start = 4
    session.calls[3].ctx = session.calls[3].input = 5_000
    session.calls[4].ctx = session.calls[4].input = 5_090
    store.write([session])
    frame = replay(store, ["chars4"], None, ["raw"], {"toy": 100_000})
    at = {
        rule: frame.filter(pl.col("rule") == rule).sort("seq").select("displayed", "basis").rows()
        for rule in ("dexto", "gemini-cli", "opencode")
    }
    assert frame.filter(pl.col("seq") == 3)["reason"][0] == "compaction"
    # call 3's prompt is in2 + out2 + in3: 20 + 10 + 20 chars4 tokens
    assert at["dexto"][3:] == [(50, "full"), (5_000 + 10 + 20, "chained")]
    assert at["gemini-cli"][3:] == [(50, "full"), (5_000, "actual")]
    assert at["opencode"][3:] == [(0, "none"), (5_010, "actual")]
    assert at["opencode"][2] == (10_090 + 10, "actual")


# -- frames for the report ------------------------------------------------------------------------


def test_frame_shapes_and_timeline(store: Store) -> None:
    store.write([_growing("t:short", 3), _growing("t:long", 6, start=15_000)])
    frame = replay(store, ["chars4", "cjk"], windows={"toy": 18_000})
    assert frame.columns == list(REPLAY_COLUMNS)
    assert frame.height == 9 * 2 * len(RULE_NAMES) * 5  # calls × estimators × rules × policies
    assert set(frame["outcome"].unique().to_list()) <= set(OUTCOMES)
    assert summarise_replay(frame).columns == list(SUMMARY_COLUMNS)
    assert summarise_replay(frame).height == 2 * len(RULE_NAMES) * 5
    # sessions of an agent calib has no rule for have no rule of their own
    assert not frame["own"].any() and set(frame["window_kind"]) == {"real"}
    assert pick_session(frame) is None
    chosen = pick_session(frame, rule="dexto")
    assert chosen == "t:long"
    line = timeline(frame, chosen, rule="dexto")
    assert line.columns == list(TIMELINE_COLUMNS)
    assert line.height == 6 * 2
    assert line.filter(pl.col("estimator") == "chars4").sort("seq")["actual"].to_list() == [
        15_000 + 90 * k for k in range(6)
    ]
    assert set(line["rule"].to_list()) == {"dexto"} and set(line["policy"].to_list()) == {"raw"}
    assert pick_session(frame.clear(), rule="dexto") is None
    empty = replay(Store(store.path.parent / "empty.duckdb"), ["chars4"])
    assert empty.columns == list(REPLAY_COLUMNS) and empty.is_empty()


def test_invalid_arguments(store: Store) -> None:
    store.write([_growing("t:g", 2)])
    with pytest.raises(UsageError, match="valid policies"):
        replay(store, ["chars4"], policies=["strip-some"])
    with pytest.raises(UsageError, match="no estimator"):
        replay(store, [])
    # strip-none is the design's other name for include
    frame = replay(store, ["chars4"], ["dexto"], ["strip-none"])
    assert frame["policy"].unique().to_list() == ["include"]


# -- the command ----------------------------------------------------------------------------------


def test_cli_json_and_text(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    with Store(db) as s:
        s.write([_growing("t:g", 5), _growing("t:m", 2, model="mystery-1")])
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "replay",
            "--db",
            str(db),
            "-e",
            "chars4",
            "-e",
            "cjk",
            "--policy",
            "raw",
            "--rule",
            "all",
            "--window",
            "11000",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["estimators"] == ["chars4", "cjk"] and document["policies"] == ["raw"]
    assert document["unknown_models"] == []  # --window gives every model a window
    rows = {(r["rule"], r["estimator"]): r for r in document["summary"]}
    assert len(rows) == len(RULE_NAMES) * 2 and rows[("dexto", "chars4")]["calls"] == 7
    assert {r["window_kind"] for r in document["summary"]} == {"fixed"}
    assert document["window"]["mode"] == 11_000 and "11,000 tokens" in document["window"]["line"]
    # by default each session under its own agent's rule: an agent calib has no rule for has none
    own = runner.invoke(app, ["replay", "--db", str(db), "--json"])
    assert own.exit_code == 0, own.output
    assert json.loads(own.stdout)["summary"] == []
    result = runner.invoke(app, ["replay", "--db", str(db), "--rule", "dexto", "--policy", "strip-all"])
    assert result.exit_code == 0, result.output
    assert "dexto" in result.stdout and "mystery-1" in result.stderr
    bad = runner.invoke(app, ["replay", "--db", str(db), "--policy", "nope"])
    assert bad.exit_code == 2 and "valid policies" in bad.stderr
    both = runner.invoke(app, ["replay", "--db", str(db), "--window", "5", "--windows", str(db)])
    assert both.exit_code == 2
    odd = runner.invoke(app, ["replay", "--db", str(db), "--window", "huge"])
    assert odd.exit_code == 2 and "auto, real, what-if" in odd.stderr


# -- real data ------------------------------------------------------------------------------------


def test_real_gemini_sessions_match_an_independent_count(tmp_path: Path) -> None:
    from helpers import shared_fixture

    source = shared_fixture("gemini")
    with Store(tmp_path / "g.duckdb") as s:
        ingest([source], store=s)
        frame = replay(s, ["chars4"], ["gemini-cli"], ["raw"], fixed_windows(200_000))
        calls = s.calls().select("session_uid", "seq", "ctx", "usage_status")
    limit = 100_000  # 0.5 of the what-if window
    # gemini-cli compresses on the last prompt count: late exactly where the truth first reaches the
    # threshold after a last known count under it
    late = 0
    for _, group in calls.sort("session_uid", "seq").group_by("session_uid", maintain_order=True):
        last = None
        for ctx, status in group.select("ctx", "usage_status").iter_rows():
            if status != "ok" or ctx is None:
                continue
            if ctx >= limit and (last is None or last < limit):
                late += 1
            last = ctx
    rows = summarise_replay(frame).to_dicts()[0]
    assert late > 0 and rows["late"] == late
    assert rows["early"] == 0 and rows["missed"] == 0
    assert rows["unknown"] == calls.filter(pl.col("usage_status") != "ok").height


def test_own_replays_each_session_under_its_agents_rule_for_its_version(store: Store) -> None:
    sessions = {
        "t:gemini": ("gemini-cli", None),
        "t:oc1": ("opencode", {"version": "1.14.30"}),
        "t:oc2": ("opencode", {"version": "2.0.25"}),
        "t:cc": ("claude-code", {"versions": ["2.1.1"]}),
        "t:other": ("test", None),  # an agent calib has no rule for: replayed under no rule
    }
    parsed = []
    for uid, (tool, meta) in sessions.items():
        p = _growing(uid, 3)
        p.session.tool, p.session.meta = tool, meta
        parsed.append(p)
    store.write(parsed)
    frame = replay(store, ["chars4"], ["own"], ["raw"], {"toy": 18_000})
    rules = dict(frame.select("session_uid", "rule").unique().iter_rows())
    assert rules == {
        "t:gemini": "gemini-cli",
        "t:oc1": "opencode",
        "t:oc2": "opencode-2",
        "t:cc": "claude-code-early",
    }
    # a rule named beside `own` is kept for every session
    both = replay(store, ["chars4"], ["own", "dexto"], ["raw"], {"toy": 18_000})
    assert set(both.filter(pl.col("session_uid") == "t:oc2")["rule"]) == {"opencode-2", "dexto"}
    assert set(both.filter(pl.col("session_uid") == "t:other")["rule"]) == {"dexto"}
    # the rows under a session's own rule are those of replaying that rule alone
    alone = replay(store, ["chars4"], ["opencode-2"], ["raw"], {"toy": 18_000})
    mine = frame.filter(pl.col("session_uid") == "t:oc2").sort("seq")
    assert mine.equals(alone.filter(pl.col("session_uid") == "t:oc2").sort("seq"))


def test_cli_own_rule_lists_the_rules_it_used(tmp_path: Path) -> None:
    db = tmp_path / "own.duckdb"
    with Store(db) as s:
        p = _growing("t:oc2", 3)
        p.session.tool, p.session.meta = "opencode", {"version": "2.0.25"}
        s.write([p])
    result = CliRunner().invoke(
        app, ["replay", "--db", str(db), "-e", "chars4", "--rule", "own", "--window", "18000", "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [r["name"] for r in document["rules"]] == ["opencode-2"]
    assert {row["rule"] for row in document["summary"]} == {"opencode-2"}


# -- the replay a batch of sessions at a time -------------------------------------------------------


def _mixed_sessions() -> list[ParsedSession]:
    """Sessions that cross Dexto's threshold on a 20,000 window (cjk one call early: wasted tokens), two
    of them alike (a tie for the session drawn), a gap in the usage, a recorded compaction, a model
    without a window, and sessions of agents with rules of their own."""
    gap = _session(
        "t:gap",
        [
            {"ctx": 15_000, "output": 10, "carry": 10},
            {"ctx": None, "output": None, "carry": None, "status": "missing"},
            {"ctx": 15_300, "output": 10, "carry": 10},
        ],
    )
    compacted = _growing("t:compact", 6, start=16_000)
    for call in compacted.calls[3:]:
        call.prompt_start = 4
    compacted.calls[3].ctx = compacted.calls[3].input = 5_000
    compacted.calls[4].ctx = compacted.calls[4].input = 5_090
    compacted.calls[5].ctx = compacted.calls[5].input = 5_180
    gemini, opencode = _growing("t:gemini", 5, start=9_800), _growing("t:oc2", 4, start=17_500)
    gemini.session.tool = "gemini-cli"
    opencode.session.tool, opencode.session.meta = "opencode", {"version": "2.0.25"}
    return [
        _growing("t:b", 12, start=17_000),
        _growing("t:a", 12, start=17_000),
        _growing("t:c", 10, start=16_900),
        gap,
        compacted,
        _growing("t:m", 3, model="mystery-1"),
        gemini,
        opencode,
    ]


@pytest.mark.parametrize("rules", [None, ["own", "dexto"]])
def test_the_tally_of_batches_is_the_summary_of_the_whole_frame(
    store: Store, rules: list[str] | None
) -> None:
    store.write(_mixed_sessions())
    names, windows = ["chars4", "cjk"], {"toy": 20_000}
    frame = replay(store, names, rules, None, windows)
    expected = summarise_replay(frame)
    assert expected.filter(pl.col("estimator") == "cjk")["wasted_tokens"].sum() > 0
    chosen = pick_session(frame, rule="dexto")
    assert chosen == "t:a"  # t:a and t:b reach as far, in as many calls: the first uid
    for calls in (1, 5, None):  # a session per batch, a few, all at once
        with Spool() as spool:
            tally = replay_store(
                store, names, rules, None, windows, spool=spool, calls=calls, timeline_at=("dexto", "raw")
            )
            assert tally.summary().equals(expected), calls
        assert tally.unknown_models() == unknown_models(frame) == ["mystery-1"]
        assert tally.rules() == set(frame["rule"].unique().to_list())
        assert tally.session == chosen
        assert tally.timeline is not None and tally.timeline.equals(timeline(frame, chosen, rule="dexto"))


def test_the_tally_of_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.duckdb") as empty, Spool() as spool:
        tally = replay_store(empty, ["chars4"], spool=spool, timeline_at=("dexto", "raw"))
        summary = tally.summary()
        assert summary.schema == summarise_replay(replay(empty, ["chars4"])).schema
    assert summary.is_empty() and summary.columns == list(SUMMARY_COLUMNS)
    assert tally.session is None and tally.timeline is None and tally.unknown_models() == []


# -- events, own rules and what-if windows ------------------------------------------------------------


def test_events_count_compactions_with_their_distance_from_the_threshold(store: Store) -> None:
    n, cross = 8, 3
    store.write([_growing("t:grow", n), _growing("t:two", n, start=10_500)])
    ctx = [10_000 + 90 * k for k in range(n)]
    limit = (
        ctx[cross - 1] + 30
    )  # chars4 (60 low) is late at `cross` by 60, cjk (40 high) early before it by 30
    frame = replay(store, ["chars4", "cjk"], ["dexto"], ["raw"], {"toy": math.ceil(limit / 0.9)})
    one = frame.filter(pl.col("session_uid") == "t:grow")
    chars4, cjk = _rows(one, "dexto", "chars4"), _rows(one, "dexto", "cjk")
    assert chars4["event"].to_list() == [None] * cross + ["late", None] + [None] * (n - cross - 2)
    assert cjk["event"].to_list() == [None] * (cross - 1) + ["early"] + [None] * (n - cross)
    # t:two starts over the threshold (a bare first estimate under it): late on call 0, then on time
    # for cjk, which shows its prompt 40 high from call 1 on
    two = _rows(frame.filter(pl.col("session_uid") == "t:two"), "dexto", "cjk")
    assert two["event"].to_list()[:2] == ["late", None]
    rows = {r["estimator"]: r for r in summarise_replay(frame).to_dicts()}
    assert (rows["chars4"]["early_fires"], rows["chars4"]["late_events"], rows["chars4"]["late"]) == (0, 2, 2)
    assert (rows["chars4"]["late_by_min"], rows["chars4"]["late_by_max"]) == (60, 10_500 - limit)
    assert (rows["cjk"]["early_fires"], rows["cjk"]["early_by_min"], rows["cjk"]["early_by_max"]) == (
        1,
        30,
        30,
    )
    assert rows["cjk"]["late_events"] == 1
    lines = replay_lines(summarise_replay(frame))
    assert lines == [
        f"test: dexto rule (not its own), real windows, chars4: 0 early, 2 late (by 60-{10_500 - limit:,} tokens)",
        f"test: dexto rule (not its own), real windows, cjk: 1 early (by 30 tokens), 1 late (by {10_500 - limit:,} tokens)",
    ]


def test_on_time_when_the_shown_context_crosses_with_the_truth(store: Store) -> None:
    store.write([_growing("t:grow", 6)])
    ctx = [10_000 + 90 * k for k in range(6)]
    limit = ctx[2] + 70  # crossed at call 3 by 20: chars4 shows ctx - 60 (under), cjk ctx + 40 (over)
    frame = replay(store, ["chars4", "cjk"], ["dexto"], ["raw"], {"toy": math.ceil(limit / 0.9)})
    rows = {r["estimator"]: r for r in summarise_replay(frame).to_dicts()}
    assert (rows["cjk"]["on_time"], rows["cjk"]["early_fires"], rows["cjk"]["late_events"]) == (1, 0, 0)
    assert (rows["chars4"]["on_time"], rows["chars4"]["late_events"]) == (0, 1)


def _agents(store: Store) -> None:
    """A gemini-cli agent whose sessions come past half its threshold on a 20,000 window, and a Dexto
    agent whose sessions stay far under it."""
    big = _growing("t:gem-big", 10, start=9_000)  # peaks at 9,810: 98% of gemini-cli's 10,000
    small = _growing("t:gem-small", 4, start=2_000)
    dexto = [_growing(f"t:dx{i}", 9, start=1_000 + 100 * i) for i in range(3)]  # about 1,000-2,000
    for p in (big, small):
        p.session.tool = "gemini-cli"
    for p in dexto:
        p.session.tool = "dexto"
    store.write([big, small, *dexto])


def test_auto_windows_keep_real_ones_where_a_session_comes_near_and_size_what_if_ones_elsewhere(
    store: Store,
) -> None:
    _agents(store)
    windows = {"toy": 20_000}
    plan = plan_windows(store, resolve_rules(None), windows, "auto")
    assert plan.kind("gemini-cli") == "real" and plan.kind("dexto") == "what-if"
    assert plan.agents["gemini-cli"].reach == pytest.approx(9_810 / 10_000)
    assert plan.agents["dexto"].reach == pytest.approx(1_920 / 18_000)
    # dexto: the window where its threshold sits halfway between the two middle prompts of its 27 calls
    prompts = sorted(1_000 + 100 * i + 90 * k for i in range(3) for k in range(9))
    middle = (prompts[12] + prompts[13]) / 2
    size = plan.what_if["dexto"]
    real = Window(20_000, 0)
    assert DextoRule().limit(real.scaled(size)) >= middle > DextoRule().limit(real.scaled(size - 1))
    assert plan.window("dexto", "toy") == Window(size, 0) and plan.window("gemini-cli", "toy") == real
    line = plan.describe()
    assert line.startswith(
        "windows: real for gemini-cli (peak at 98% of the threshold): a session reaches 50%"
    )
    assert f"what-if for dexto ({size:,} tokens; peak at 11% of the real threshold): no session" in line
    # the rows: each session under its own rule, on its agent's windows
    frame = replay(store, ["chars4"], ["own"], ["raw"], windows, window="auto")
    kinds = dict(frame.select("tool", "window_kind").unique().iter_rows())
    assert kinds == {"gemini-cli": "real", "dexto": "what-if"}
    assert set(frame.filter(pl.col("tool") == "dexto")["window"]) == {size}
    assert frame["own"].all()
    summary = summarise_replay(frame)
    assert summary.select("agent", "rule", "window_kind").rows() == [
        ("dexto", "dexto", "what-if"),
        ("gemini-cli", "gemini-cli", "real"),
    ]
    # every dexto session passes the threshold somewhere: a compaction (early, on time or late) each
    dexto = summary.row(0, named=True)
    assert dexto["early_fires"] + dexto["on_time"] + dexto["late_events"] >= 3
    # real: the table's windows only; what-if: every agent sized
    assert plan_windows(store, resolve_rules(None), windows, "real").what_if == {}
    assert set(plan_windows(store, resolve_rules(None), windows, "what-if").what_if) == {
        "dexto",
        "gemini-cli",
    }
    with pytest.raises(UsageError, match="auto, real, what-if"):
        plan_windows(store, resolve_rules(None), windows, "huge")


def test_the_tally_of_batches_is_the_summary_of_the_whole_frame_with_auto_windows(store: Store) -> None:
    _agents(store)
    store.write(_mixed_sessions())
    frame = replay(store, ["chars4", "cjk"], ["own", "codex"], None, {"toy": 20_000}, window="auto")
    expected = summarise_replay(frame)
    assert set(expected["window_kind"]) == {"real", "what-if"}
    chosen = pick_session(frame)
    assert chosen is not None and frame.filter(pl.col("session_uid") == chosen)["tool"][0] == "dexto"
    for calls in (1, 7):
        with Spool() as spool:
            tally = replay_store(
                store,
                ["chars4", "cjk"],
                ["own", "codex"],
                None,
                {"toy": 20_000},
                spool=spool,
                window="auto",
                calls=calls,
                timeline_at=("own", "raw"),
            )
            assert tally.summary().equals(expected), calls
        assert tally.session == chosen
        assert tally.timeline is not None and tally.timeline.equals(timeline(frame, chosen))


def test_claude_code_calls_whose_output_count_was_lost_are_judged_on_the_recorded_output(
    store: Store,
) -> None:
    calls = [{"ctx": 10_000 + 90 * k, "output": 10, "carry": 10} for k in range(4)]
    session = _session("t:cc", calls, provider="anthropic", style="anthropic")
    session.session.tool, session.session.meta = "claude-code", {"versions": ["2.1.50"]}
    session.calls[2].carry = None  # a streaming placeholder: the output was never counted
    session.calls[2].output = 2
    store.write([session])
    frame = replay(store, ["chars4"], ["own"], ["raw"], {"toy": 100_000})
    assert frame["rule"].unique().to_list() == ["claude-code"]
    assert frame.sort("seq")["truth"].to_list() == [10_010, 10_100, 10_182, 10_280]
    assert "unknown" not in frame["outcome"].to_list()


def test_run_replay_on_the_sample_shows_each_agent_compacting_early_or_late(tmp_path: Path) -> None:
    from helpers import ROOT

    sample = ROOT / "datasets" / "sample"
    if not sample.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {sample} (run `make sample`)")
    db = tmp_path / "sample.duckdb"
    with Store(db) as s:
        ingest([sample], store=s)
    result = CliRunner().invoke(app, ["replay", "--db", str(db), "--policy", "raw", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    agents = ("claude-code", "codex", "dexto", "gemini-cli", "opencode")
    newer = ("cline", "llxprt", "qwen-code", "roo-code")
    assert [a["agent"] for a in document["window"]["agents"]] == sorted((*agents, *newer))
    assert all(a["kind"] == "what-if" and a["reach"] < 0.5 for a in document["window"]["agents"])
    rows = document["summary"]
    # each session under its own agent's rule; Cline's SDK files and task folders under their two
    owned = {(a, a) for a in (*agents, *newer)} | {("cline", "cline-legacy")}
    assert {(r["agent"], r["rule"]) for r in rows} == owned
    for agent in agents:
        events = [r["early_fires"] + r["late_events"] for r in rows if r["agent"] == agent]
        assert max(events) > 0, agent
    # what a user reads: the table, the windows line, one line per agent and rule
    text = CliRunner().invoke(app, ["replay", "--db", str(db), "-q"])
    assert text.exit_code == 0, text.output
    out = text.stdout.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("windows: what-if for claude-code ("))
    assert out[start + 1 :] == document["lines"]
    assert {line.split(":")[0] for line in document["lines"]} == {*agents, *newer}
    for line in document["lines"]:
        if line.split(":")[0] in agents:
            assert " late (by " in line or " early (by " in line, line

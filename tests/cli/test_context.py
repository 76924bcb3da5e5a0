"""`calib context`: the /context panel calib's tracker would have shown before a logged call, beside what
the agent's own rule and estimator showed and what the provider counted.

The bundled sample is ingested and fitted once for the module. Every figure the command prints is held
to a source other than itself: the provider's count to the store's `calls.ctx`, the calibrated total and
the agent's display to what `calib replay` shows for the calibration and for the agent's own estimator
(under the agent's own rule, policy `raw`, real windows), the fitted static overhead to the runtime's
`Calibration.params(...).static_for(agent)`. On the real fixtures, the tracker's count is checked to be
nearer the provider's than the agents' own on the held-out sessions."""

from __future__ import annotations

import json
import shutil
import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers import ROOT, shared_fixture
from typer.testing import CliRunner

from calib.analysis.replay import replay
from calib.analysis.rules import RULES, agent_estimator
from calib.calibration.pipeline import run_fit
from calib.cli.app import app
from calib.runtime import load
from calib.scoring.chain import is_holdout
from calib.store.store import Store

SAMPLE = ROOT / "datasets" / "sample"
# What the tracker calls the basis of the total the replay calls `chained` and `full`.
TRACKER_BASIS = {"chained": "reported", "full": "estimated"}
PANEL_KEYS = {"session", "call", "agent", "actual", "agent_shown", "calibrated", "basis", "usage"}


def _run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["context", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


@dataclass(frozen=True)
class Fitted:
    """A fitted store, and what the store and `calib replay` say of each of its calls."""

    db: Path
    config: Path
    sessions: list[dict[str, Any]]  # the sessions with calls, newest first (as `calib context` orders them)
    calls: dict[str, dict[str, Any]]  # call_uid: session_uid, seq, ctx (None without usage)
    tracker: dict[str, dict[str, Any]]  # call_uid: the replay's row of the calibration
    agent: dict[str, dict[str, Any]]  # call_uid: the replay's row of the agent's own estimator

    def cli(self, *args: str | Path) -> tuple[int, str, str]:
        return _run("--db", self.db, "--config", self.config, *args)

    def session(self, uid: str) -> dict[str, Any]:
        return next(s for s in self.sessions if s["session_uid"] == uid)

    def call_uids(self, uid: str) -> list[str]:
        """The calls of a session, in order."""
        return sorted((c for c in self.calls if self.calls[c]["session_uid"] == uid), key=self._seq)

    def _seq(self, call_uid: str) -> int:
        return int(self.calls[call_uid]["seq"])


def _newest_first(session: dict[str, Any]) -> tuple[bool, datetime, str]:
    when = session["ended_at"] or session["started_at"]
    return when is not None, when or datetime.min, session["session_uid"]


def _fit(paths: list[Path], folder: Path) -> Fitted:
    db, config = folder / "store.duckdb", folder / "calibration.json"
    run_fit(paths, db=db, out=config)
    name = f"calibrated:{config}"
    with Store(db, read_only=True) as store:
        sessions = store.query(
            "SELECT s.session_uid, s.native_id, s.tool, s.started_at, s.ended_at, count(*) AS calls "
            "FROM sessions s JOIN calls c USING (session_uid) GROUP BY ALL"
        ).to_dicts()
        calls = store.query("SELECT call_uid, session_uid, seq, ctx FROM calls").to_dicts()
        own = sorted({agent_estimator(s["tool"]) for s in sessions})
        frame = replay(store, [name, *own], rules=["own"], policies=["raw"], window="real")
    frame = frame.filter(pl.col("own"))
    tools = {s["session_uid"]: s["tool"] for s in sessions}
    rows = frame.to_dicts()
    return Fitted(
        db=db,
        config=config,
        sessions=sorted(sessions, key=_newest_first, reverse=True),
        calls={c["call_uid"]: c for c in calls},
        tracker={r["call_uid"]: r for r in rows if r["estimator"] == name},
        agent={r["call_uid"]: r for r in rows if r["estimator"] == agent_estimator(tools[r["session_uid"]])},
    )


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Fitted:
    """The bundled sample, ingested and fitted as `calib fit datasets/sample` does."""
    if not SAMPLE.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {SAMPLE} (run `make sample`)")
    fitted = _fit([SAMPLE], tmp_path_factory.mktemp("context"))
    assert len(fitted.calls) > 500 and len(fitted.tracker) == len(fitted.calls)
    return fitted


@pytest.fixture(scope="module")
def every_call(sample: Fitted) -> list[dict[str, Any]]:
    """`calib context --all --json`'s calls."""
    code, stdout, stderr = sample.cli("--all", "--json")
    assert (code, stderr) == (0, "")
    return json.loads(stdout)["calls"]


def _pct(error: float, actual: int) -> str:
    return f"{round(error * 100 / actual, 4):+.2f}%"


def _shown(error: float, actual: int) -> str:
    return f"{error:+,.0f}, {_pct(error, actual)}"


def _verification_line(f: Fitted, call_uid: str) -> str:
    """The line `--all` prints for a call, made of the store's count and the replay's displays."""
    call = f.calls[call_uid]
    session = f.session(call["session_uid"])
    where = f"{session['native_id'][:12]} call {call['seq'] + 1}/{session['calls']}"
    shown, calibrated = f.agent[call_uid]["displayed"], f.tracker[call_uid]["displayed"]
    actual = call["ctx"]
    if actual is None:
        return f"{where}: no usage recorded; agent showed {shown:,.0f}, calibrated {calibrated:,.0f}"
    basis = TRACKER_BASIS[f.tracker[call_uid]["basis"]]
    return (
        f"{where}: provider {actual:,} · agent showed {shown:,.0f} ({_shown(shown - actual, actual)}) "
        f"· calibrated {calibrated:,.0f} ({_shown(calibrated - actual, actual)}, {basis})"
    )


# -- the default: the last call of the newest session ------------------------------------------------


def test_by_default_the_panel_is_before_the_last_call_of_the_newest_session(sample: Fitted) -> None:
    newest = sample.sessions[0]
    uids = sample.call_uids(newest["session_uid"])
    last, before = uids[-1], uids[-2]
    n = newest["calls"]
    assert len(uids) == n
    row, agent = sample.tracker[last], sample.agent[last]
    actual, previous = sample.calls[last]["ctx"], sample.calls[before]["ctx"]
    # what the panel below holds for this session: both calls reported, a known window, a fitted overhead
    assert actual is not None and previous is not None and row["window"] is not None
    code, stdout, stderr = sample.cli()
    assert (code, stderr) == (0, "")
    code, document, _ = sample.cli("--json")
    (usage,) = [c["usage"] for c in json.loads(document)["calls"]]

    total, window = int(row["displayed"]), int(row["window"])
    reserve = min(int(row["max_output"]), window - 1)
    system = int(
        load(str(sample.config)).params(row["provider"], row["model"]).static_for(newest["tool"]) + 0.5
    )
    reasoning = usage["breakdown"]["reasoning"]
    assert usage["breakdown"]["fitted"] == ["system", "tools"] and not usage["breakdown"]["clamped"]
    assert usage["should_compact"] == row["compact"]
    rule = row["rule"]
    how = f"{rule} rule, {agent['estimator']}" if RULES[rule].uses_estimator else f"{rule} rule"
    since = (
        f"reported: the last report plus {usage['since_report']:,} estimated since"
        if row["basis"] == "chained"
        else "estimated: estimated whole (nothing reported since the start or a compaction)"
    )
    checked = sample.tracker[before]["displayed"]
    assert stdout.splitlines() == [
        f"Session {newest['native_id']} ({newest['tool']}, {row['provider']}/{row['model']}), "
        f"before call {n} of {n}",
        f"  context     {total:,} of {window:,} tokens ({total * 100 / window:.1f}%), "
        f"free {window - total - reserve:,} after a {reserve:,} output reserve",
        f"  basis       {since}",
        f"  breakdown   system {system:,} · tools 0 · messages {total - system - reasoning:,} "
        f"· reasoning {reasoning:,} (fitted static overhead: system prompt and tool schemas)",
        f"  compaction  at {row['threshold']:,.0f} ({rule} rule): "
        f"{'would compact now' if row['compact'] else 'not yet'}",
        f"  last check  call {n - 1}: estimated {checked:,.0f}, provider {previous:,}, "
        f"error {checked - previous:+,.0f} ({(checked - previous) * 100 / previous:+.2f}%)",
        f"  the agent showed {agent['displayed']:,.0f} ({how}, basis {agent['basis']})",
        f"  the provider counted {actual:,}: agent {_shown(agent['displayed'] - actual, actual)}, "
        f"calibrated {_shown(total - actual, actual)}",
    ]


def test_the_first_call_is_estimated_whole_with_no_check_before_it(sample: Fitted) -> None:
    newest = sample.sessions[0]
    first = sample.call_uids(newest["session_uid"])[0]
    code, stdout, stderr = sample.cli("--call", "1")
    assert (code, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[0].endswith(f"before call 1 of {newest['calls']}")
    assert (
        lines[2]
        == "  basis       estimated: estimated whole (nothing reported since the start or a compaction)"
    )
    assert not [line for line in lines if line.startswith("  last check")]
    assert f"  context     {sample.tracker[first]['displayed']:,.0f} of " in lines[1]


def test_a_call_without_usage_says_its_count_was_not_recorded(sample: Fitted) -> None:
    unreported = [
        s for s in sample.sessions if sample.calls[sample.call_uids(s["session_uid"])[-1]]["ctx"] is None
    ]
    assert unreported, "the sample has a session whose last call lost its usage"
    session = unreported[0]
    last = sample.call_uids(session["session_uid"])[-1]
    code, stdout, stderr = sample.cli("--session", session["session_uid"])
    assert (code, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[-1] == "  the provider's count of this call was not recorded"
    assert not [line for line in lines if "the provider counted" in line]
    assert f"  context     {sample.tracker[last]['displayed']:,.0f} of " in lines[1]


# -- --json --------------------------------------------------------------------------------------------


def _check_panel(call: dict[str, Any]) -> None:
    assert set(call) >= PANEL_KEYS
    b = call["usage"]["breakdown"]
    assert b["system"] + b["tools"] + b["messages"] + b["reasoning"] == call["usage"]["total"]
    assert call["usage"]["total"] == call["calibrated"]
    assert call["basis"] == call["usage"]["basis"]


def test_json_is_one_document_of_the_call_shown(sample: Fitted) -> None:
    code, stdout, stderr = sample.cli("--json")
    assert (code, stderr) == (0, "")
    document = json.loads(stdout)
    assert document["config"] == str(sample.config) and document["window"] == "real"
    (call,) = document["calls"]
    _check_panel(call)
    newest = sample.sessions[0]
    assert (call["session"], call["native_id"]) == (newest["session_uid"], newest["native_id"])
    assert call["call"] == call["calls"] == newest["calls"]
    assert call["call_uid"] == sample.call_uids(newest["session_uid"])[-1]


def test_all_json_gives_every_call_of_every_session_in_order(
    sample: Fitted, every_call: list[dict[str, Any]]
) -> None:
    # in the store's order (sessions by uid), as they are read
    in_order = sorted(sample.sessions, key=lambda s: s["session_uid"])
    expected = [(s["session_uid"], n) for s in in_order for n in range(1, s["calls"] + 1)]
    assert [(c["session"], c["call"]) for c in every_call] == expected
    # calls without usage are in it too, with no provider count and no errors
    assert len(every_call) == len(sample.calls)
    unreported = [c for c in every_call if sample.calls[c["call_uid"]]["ctx"] is None]
    assert unreported
    for call in unreported:
        assert call["actual"] is None
        assert [
            call[k] for k in ("agent_error", "agent_error_pct", "calibrated_error", "calibrated_error_pct")
        ] == [None] * 4
    for call in every_call:
        _check_panel(call)
        assert sample.calls[call["call_uid"]]["seq"] + 1 == call["call"]
        assert call["calls"] == sample.session(call["session"])["calls"]


def test_the_numbers_are_the_stores_and_the_replays(sample: Fitted, every_call: list[dict[str, Any]]) -> None:
    for call in every_call:
        uid = call["call_uid"]
        tracker, agent = sample.tracker[uid], sample.agent[uid]
        assert call["calibrated"] == tracker["displayed"], uid
        assert call["basis"] == TRACKER_BASIS[tracker["basis"]], uid
        assert call["actual"] == sample.calls[uid]["ctx"], uid
        assert call["agent_estimator"] == agent["estimator"] == agent_estimator(call["agent"].split("/")[0])
        assert (call["agent_shown"], call["agent_basis"]) == (agent["displayed"], agent["basis"]), uid
        # a model without a known window (Qwen's own) has no threshold: whether it compacts is not known
        expected = agent["compact"] if agent["threshold"] is not None else None
        assert call["agent_compacts"] == expected, uid
        assert (call["usage"]["window"], call["usage"]["threshold"]) == (
            tracker["window"],
            tracker["threshold"],
        )
        if call["actual"] is not None:
            actual = call["actual"]
            assert call["agent_error"] == call["agent_shown"] - actual
            assert call["calibrated_error"] == call["calibrated"] - actual
            assert call["agent_error_pct"] == round((call["agent_shown"] - actual) * 100 / actual, 4)
            assert call["calibrated_error_pct"] == round((call["calibrated"] - actual) * 100 / actual, 4)
    # both of the tracker's bases, and the agents' own displays both before and after a report
    assert {c["basis"] for c in every_call} == {"reported", "estimated"}
    assert {"actual", "none"} <= {c["agent_basis"] for c in every_call}


# -- --all: one verification line per call -------------------------------------------------------------


def test_all_prints_every_calls_verification_line(sample: Fitted) -> None:
    code, stdout, stderr = sample.cli("--all")
    assert (code, stderr) == (0, "")
    in_order = sorted(sample.sessions, key=lambda s: s["session_uid"])
    expected = [_verification_line(sample, c) for s in in_order for c in sample.call_uids(s["session_uid"])]
    assert stdout.splitlines() == expected


def test_all_of_one_session_prints_its_calls_in_order(sample: Fitted) -> None:
    # a session with a call whose usage was lost and a compaction, if the sample has one
    def mixed(session: dict[str, Any]) -> tuple[bool, bool]:
        uids = sample.call_uids(session["session_uid"])
        return (
            any(sample.calls[u]["ctx"] is None for u in uids),
            any(sample.tracker[u]["reason"] == "compaction" for u in uids),
        )

    session = max(sample.sessions, key=mixed)
    assert mixed(session)[0]
    code, stdout, stderr = sample.cli("--all", "--session", session["session_uid"])
    assert (code, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines == [_verification_line(sample, c) for c in sample.call_uids(session["session_uid"])]
    assert len(lines) == session["calls"]
    assert [line for line in lines if ": no usage recorded; agent showed " in line]


# -- choosing a session and a call ---------------------------------------------------------------------


def _unique_start(f: Fitted, of: str) -> str:
    """The shortest start of `of` that names only one session."""
    for n in range(1, len(of) + 1):
        named = [
            s for s in f.sessions if s["session_uid"].startswith(of[:n]) or s["native_id"].startswith(of[:n])
        ]
        if len(named) == 1:
            return of[:n]
    raise AssertionError(f"no start of {of} names one session")


@pytest.mark.parametrize("given", ["uid", "native id", "start of the uid", "start of the native id"])
def test_session_by_uid_native_id_or_a_unique_start(sample: Fitted, given: str) -> None:
    session = sample.sessions[len(sample.sessions) // 2]  # not the newest, shown by default
    uid, native = session["session_uid"], session["native_id"]
    name = {
        "uid": uid,
        "native id": native,
        "start of the uid": _unique_start(sample, uid),
        "start of the native id": _unique_start(sample, native),
    }[given]
    assert len(name) < len(uid) or given in ("uid", "native id")
    code, stdout, stderr = sample.cli("--session", name, "--json")
    assert (code, stderr) == (0, "")
    (call,) = json.loads(stdout)["calls"]
    assert (call["session"], call["call"], call["call_uid"]) == (
        uid,
        session["calls"],
        sample.call_uids(uid)[-1],
    )
    code, stdout, _ = sample.cli("--session", name, "--call", "2", "--json")
    (call,) = json.loads(stdout)["calls"]
    assert (call["session"], call["call"], call["call_uid"]) == (uid, 2, sample.call_uids(uid)[1])


def test_an_unknown_session_is_one_line(sample: Fitted) -> None:
    assert sample.cli("--session", "no-such-session") == (
        2,
        "",
        "Error: no session 'no-such-session' in the store; give a session's uid or native id (or a unique "
        "start of one); `calib context --all --json` lists them\n",
    )


def test_a_start_of_several_sessions_names_the_first_five_by_uid(sample: Fitted) -> None:
    start = "opencode:"
    named = [
        s for s in sample.sessions if s["session_uid"].startswith(start) or s["native_id"].startswith(start)
    ]
    assert len(named) > 5
    listed = ", ".join(s["session_uid"] for s in named[:5])
    assert sample.cli("--session", start) == (
        2,
        "",
        f"Error: {start!r} names {len(named)} sessions ({listed}, ...); give more of the id, or a uid\n",
    )


def test_a_start_of_a_few_sessions_lists_them_all(sample: Fitted) -> None:
    uids = [s["session_uid"] for s in sample.sessions]
    for n in range(len(uids[0]), 0, -1):  # the longest start two sessions share, but no more than 5
        start = uids[0][:n]
        named = [u for u in uids if u.startswith(start)]
        if 1 < len(named) <= 5:
            break
    else:
        pytest.skip("no start of the first uid names 2 to 5 sessions")
    assert sample.cli("--session", start) == (
        2,
        "",
        f"Error: {start!r} names {len(named)} sessions ({', '.join(named)}); give more of the id, or a uid\n",
    )


def test_an_empty_session_is_a_usage_error(sample: Fitted) -> None:
    assert sample.cli("--session", "") == (
        2,
        "",
        "Error: --session is empty; give a session's uid or native id (or a unique start of one)\n",
    )


def test_a_window_other_than_real_or_a_number_is_a_usage_error(sample: Fitted) -> None:
    assert sample.cli("--window", "auto") == (
        2,
        "",
        "Error: --window auto: calib context shows a call on the real window or on N tokens; "
        "give --window real or --window N\n",
    )


def test_call_numbers_outside_the_session_are_one_line(sample: Fitted) -> None:
    newest = sample.sessions[0]
    n = newest["calls"]
    assert sample.cli("--call", "0") == (
        2,
        "",
        "Error: --call 0: calls are numbered from 1; give --call 1 for the first call\n",
    )
    assert sample.cli("--call", str(n + 1)) == (
        2,
        "",
        f"Error: session {newest['native_id']} has {n} calls, not {n + 1}; give --call 1 to {n}\n",
    )
    assert sample.cli("--call", "2", "--all") == (
        2,
        "",
        "Error: --call and --all ask for different things; give one of them\n",
    )


# -- the calibration -------------------------------------------------------------------------------------


def test_without_config_it_reads_calibration_json_of_the_folder(
    sample: Fitted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _run("--db", sample.db) == (
        1,
        "",
        "Error: no calibration to count with: calibration.json is not in this folder; run `calib fit PATH` "
        "to write one, or give --config PATH\n",
    )
    shutil.copy(sample.config, tmp_path / "calibration.json")
    code, stdout, stderr = _run("--db", sample.db)
    assert (code, stderr) == (0, "")
    assert stdout == sample.cli()[1]
    code, stdout, _ = _run("--db", sample.db, "--json")
    assert json.loads(stdout)["config"] == "calibration.json"


def test_a_config_that_is_not_json_is_one_line_naming_it(sample: Fitted, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("not json\n")
    assert _run("--db", sample.db, "--config", bad) == (
        1,
        "",
        f"Error: the calibration config is not valid JSON: Expecting value ({bad}:1); re-export it with "
        "`calib fit`\n",
    )


def test_a_missing_config_is_one_line_naming_it(sample: Fitted, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    assert _run("--db", sample.db, "--config", missing) == (
        1,
        "",
        f"Error: cannot read the calibration config: No such file or directory ({missing}); run `calib fit` "
        "to write one\n",
    )


def test_help_names_the_options() -> None:
    result = CliRunner().invoke(app, ["context", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.replace("│", " ").split())
    assert [
        o for o in ("--session", "--call", "--all", "--config", "--window", "--json") if o not in text
    ] == []
    assert "Default: the last call of the newest session." in text


# -- real data: the tracker against the agents' own displays, on the held-out sessions ------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Fitted:
    """Every real fixture, ingested and fitted (~3 s)."""
    return _fit([shared_fixture()], tmp_path_factory.mktemp("context-real"))


@pytest.mark.realdata
def test_on_held_out_real_sessions_the_tracker_is_nearer_the_provider_than_the_agent(real: Fitted) -> None:
    code, stdout, stderr = real.cli("--all", "--json")
    assert (code, stderr) == (0, "")
    errors: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    # the first call of a session has nothing reported before it: the agents show 0 there
    for call in json.loads(stdout)["calls"]:
        actual = call["actual"]
        if actual and call["call"] > 1 and is_holdout(call["session"]):
            errors[call["agent"]][0].append(abs(call["calibrated"] - actual) / actual)
            errors[call["agent"]][1].append(abs(call["agent_shown"] - actual) / actual)
    medians = {agent: (statistics.median(t), statistics.median(a)) for agent, (t, a) in errors.items()}
    assert {"claude-code", "codex", "gemini-cli", "opencode"} <= set(medians), medians
    assert min(len(t) for t, _ in errors.values()) >= 20, {a: len(t) for a, (t, _) in errors.items()}
    for agent, (tracker, shown) in medians.items():
        assert tracker < shown, (agent, medians)
        # top-level agents: measured 0.01-0.05% against 0.4-1.2%. A sub-agent's appended text is mostly
        # unrecorded (chain breaks `unlogged_turn`): both displays build on the last report alone there.
        if "/" not in agent:
            assert tracker < 0.001 and tracker * 5 < shown, (agent, medians)


@pytest.mark.realdata
def test_a_session_sharing_its_native_id_is_chosen_by_its_uid(real: Fitted) -> None:
    shared: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in real.sessions:
        shared[s["native_id"]].append(s)
    # gemini-cli's uid is the native id and the start: a resumed session shares the id (the fewest here)
    native, sessions = min(((k, v) for k, v in shared.items() if len(v) > 1), key=lambda kv: len(kv[1]))
    code, _, stderr = real.cli("--session", native)
    assert code == 2
    assert stderr.startswith(f"Error: {native!r} names {len(sessions)} sessions (")
    for session in sessions:
        code, stdout, stderr = real.cli("--session", session["session_uid"], "--json")
        assert (code, stderr) == (0, "")
        (call,) = json.loads(stdout)["calls"]
        assert (call["session"], call["call"]) == (session["session_uid"], session["calls"])


@pytest.mark.realdata
def test_sessions_sharing_a_native_id_are_listed_by_what_tells_them_apart(real: Fitted) -> None:
    shared: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in real.sessions:
        shared[s["native_id"]].append(s)
    native, sessions = next((k, v) for k, v in shared.items() if len(v) > 1)
    _, _, stderr = real.cli("--session", native)
    assert [s for s in sessions if s["session_uid"] in stderr]

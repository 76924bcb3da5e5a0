"""The removal ledger (`calib.analysis.removals`) on sessions whose every count is known.

The calibration counts `len(text) / 4` exactly (chars4 base, ratios 1, no framing), every text has a
length divisible by 4, and each call's usage is written by hand from the parts it sends plus a system
prompt, with the cache fields a provider would report. So every ledger number below follows from the
session alone; only the dollars come from the price table, through the same lookup `calib cost` uses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import MINUTE, T0, SessionBuilder, chars4_config, text_of

from calib.analysis.prices import price_book
from calib.analysis.removals import COLUMNS, removal_ledger
from calib.analysis.savings import run_savings
from calib.core.records import ParsedSession
from calib.store.store import Store


def _anthropic() -> ParsedSession:
    """A 1,000-token system prompt; a tool output of 1,000 tokens pruned to a 2-token placeholder
    before call 3; a compaction to a 120-token summary at call 5. Anthropic caching: each call reads
    what the one before cached and writes the rest."""
    b = SessionBuilder("test:anthropic", "anthropic", "claude-sonnet-4-5", "anthropic")
    b.part("user_text", 100)
    b.call(0, 0, 1100, 0, 1100, output=50)
    b.part("assistant_text", 50, by=0)
    b.part("tool_result", 1000, pruned_at=T0 + 2.5 * MINUTE, pruned_text=text_of(2, "p"))
    b.call(0, 1, 2150, 1100, 1050)
    b.part("assistant_text", 40, by=1)
    b.part("user_text", 100)
    b.call(0, 2, 2290, 2150, 140)
    b.part("assistant_text", 40, by=2)
    b.part("tool_result", 200)
    # the prune: the cache holds the prefix up to the pruned output (1,150), the rest is written again
    b.call(0, 3, 1532, 1150, 382)
    b.part("assistant_text", 40, by=3)
    b.part("user_text", 100)
    b.call(0, 4, 1672, 1532, 140)
    b.part("assistant_text", 40, by=4)
    b.part("summary", 120)
    b.part("user_text", 100)
    # the compaction: only the system prompt is still cached
    b.call(10, 5, 1220, 1000, 220)
    b.part("assistant_text", 40, by=5)
    b.part("user_text", 100)
    b.call(10, 6, 1360, 1220, 140)
    return b.session()


def _openai() -> ParsedSession:
    """A 500-token system prompt; call 0's 60 reasoning tokens dropped at the new user turn before call
    2, which breaks the implicit cache after 128 tokens."""
    b = SessionBuilder("test:openai", "openai", "gpt-5", "openai")
    b.part("user_text", 100)
    b.call(0, 0, 600, 0, None, output=80, reasoning=60)
    b.part("reasoning", 60, by=0, pruned_at=T0 + 1.5 * MINUTE, pruned_text="")
    b.part("assistant_text", 20, by=0)
    b.part("tool_result", 200)
    b.call(0, 1, 880, 512, None)
    b.part("assistant_text", 40, by=1)
    b.part("user_text", 100)
    b.call(0, 2, 960, 128, None)
    b.part("assistant_text", 40, by=2)
    b.part("tool_result", 100)
    b.call(0, 3, 1100, 896, None)
    return b.session()


def _lost_usage() -> ParsedSession:
    """A prune before a call whose usage the log lost."""
    b = SessionBuilder("test:lost", "anthropic", "claude-sonnet-4-5", "anthropic")
    b.part("user_text", 100)
    b.call(0, 0, 1100, 0, 1100)
    b.part("assistant_text", 40, by=0)
    b.part("tool_result", 300, pruned_at=T0 + 1.5 * MINUTE, pruned_text=text_of(2, "p"))
    b.call(0, 1, 1440, 1100, 340)
    b.part("assistant_text", 40, by=1)
    b.part("user_text", 100)
    b.call(0, 2, None, None, None)
    return b.session()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("removals") / "calib.duckdb"
    with Store(path) as s:
        s.write([_anthropic(), _openai(), _lost_usage()])
    return path


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return chars4_config(tmp_path_factory.mktemp("config") / "calibration.json")


def _usd(
    provider: str, model: str, minute: float, ctx: int, read: int, write: int | None, output: int
) -> float:
    row = {"provider": provider, "model": model, "ctx": ctx, "cache_read": read, "cache_write": write,
           "ts": T0 + minute * MINUTE}  # fmt: skip
    price = price_book().price(row, output)
    assert price is not None
    return float(price[0] + price[1])


def _events(store: Path, config: Path) -> dict[tuple[str, int], dict[str, Any]]:
    with Store(store, read_only=True) as s:
        ledger = removal_ledger(s, config)
    assert ledger.columns == list(COLUMNS)
    return {(row["session"], row["call"]): row for row in ledger.to_dicts()}


def test_a_prune_under_anthropic_caching(store: Path, config: Path) -> None:
    event = _events(store, config)[("test:anthropic", 3)]
    assert event["kind"] == "pruned"
    # 1,000 tokens left for a 2-token placeholder; the chain predicted 2,290 + 40 + 200 = 2,530
    assert (event["removed_estimated"], event["removed_observed"], event["basis"]) == (998, 998, "observed")
    assert (event["ctx_before"], event["ctx_after"]) == (2290, 1532)
    assert (event["cache_read_before"], event["cache_read_after"], event["cache_write_next"]) == (
        2150,
        1150,
        382,
    )
    assert (event["caching"], event["calls_after"], event["window_end"]) == ("explicit", 2, "compaction")
    # without it: call 3 reads all 2,290 tokens call 2 cached and writes 240 (2,530 - 2,290) instead of
    # reading 1,150 and writing 382; call 4 reads the 998 tokens more
    assert event["net_cache_read"] == (2290 - 1150) + 998
    assert event["net_cache_write"] == 240 - 382
    assert event["net_uncached"] == 0
    assert event["net_tokens"] == 2 * 998
    first = _usd("anthropic", "claude-sonnet-4-5", 3, 2530, 2290, 240, 40) - _usd(
        "anthropic", "claude-sonnet-4-5", 3, 1532, 1150, 382, 40
    )
    second = _usd("anthropic", "claude-sonnet-4-5", 4, 2670, 2530, 140, 40) - _usd(
        "anthropic", "claude-sonnet-4-5", 4, 1672, 1532, 140, 40
    )
    assert (
        first < 0 < first + second
    )  # the cache re-write cost more than the call saved; the next paid it back
    assert event["net_usd"] == pytest.approx(first + second, abs=1e-6)
    assert event["paid_off_after"] == 2


def test_a_compaction_nets_its_summary(store: Path, config: Path) -> None:
    event = _events(store, config)[("test:anthropic", 5)]
    assert event["kind"] == "compaction"
    # call 4's 672 tokens of parts plus its 40 of output left; a 120-token summary came in
    assert (event["removed_estimated"], event["removed_observed"]) == (592, 592)
    assert (event["calls_after"], event["window_end"]) == (2, "session")
    assert event["net_cache_read"] == (1672 - 1000) + 592
    assert event["net_cache_write"] == (1812 - 1672) - 220
    assert event["net_tokens"] == 2 * 592
    expected = (
        _usd("anthropic", "claude-sonnet-4-5", 5, 1812, 1672, 140, 40)
        - _usd("anthropic", "claude-sonnet-4-5", 5, 1220, 1000, 220, 40)
        + _usd("anthropic", "claude-sonnet-4-5", 6, 1952, 1812, 140, 40)
        - _usd("anthropic", "claude-sonnet-4-5", 6, 1360, 1220, 140, 40)
    )
    assert event["net_usd"] == pytest.approx(expected, abs=1e-6)
    assert event["paid_off_after"] == 2


def test_reasoning_dropped_under_implicit_caching_never_pays_off(store: Path, config: Path) -> None:
    event = _events(store, config)[("test:openai", 2)]
    assert event["kind"] == "reasoning"
    # the reported reasoning count left; the chain predicted 880 + 40 + 100 = 1,020
    assert (event["removed_estimated"], event["removed_observed"]) == (60, 60)
    assert event["caching"] == "implicit" and event["cache_write_next"] is None
    # without it call 2 reads the whole 880-token prompt of call 1 from the cache (not 128), call 3 60 more
    assert event["net_cache_read"] == (880 - 128) + 60
    assert event["net_cache_write"] == 0
    assert event["net_uncached"] == 2 * 60 - event["net_cache_read"]
    expected = (
        _usd("openai", "gpt-5", 2, 1020, 880, None, 40)
        - _usd("openai", "gpt-5", 2, 960, 128, None, 40)
        + _usd("openai", "gpt-5", 3, 1160, 956, None, 40)
        - _usd("openai", "gpt-5", 3, 1100, 896, None, 40)
    )
    assert expected < 0
    assert event["net_usd"] == pytest.approx(expected, abs=1e-6)
    assert event["paid_off_after"] is None


def test_a_removal_before_a_call_without_usage_is_listed_without_observed_figures(
    store: Path, config: Path
) -> None:
    events = _events(store, config)
    event = events[("test:lost", 2)]
    assert event["kind"] == "pruned"
    assert event["removed_estimated"] == 298
    assert event["removed_observed"] is None
    assert event["calls_after"] is None and event["net_usd"] is None
    assert set(events) == {("test:anthropic", 3), ("test:anthropic", 5), ("test:openai", 2), ("test:lost", 2)}


def test_the_report_sums_the_events_and_says_what_they_assume(store: Path, config: Path) -> None:
    report = run_savings(store, config)
    by_kind = {(r["agent"], r["kind"]): r for r in report.summary}
    assert set(by_kind) == {("test", "compaction"), ("test", "pruned"), ("test", "reasoning")}
    pruned = by_kind[("test", "pruned")]
    assert (pruned["events"], pruned["observed"], pruned["removed_estimated"]) == (2, 1, 998 + 298)
    assert pruned["estimate_mae"] == 0.0
    assert (pruned["paid_off"], pruned["never"]) == (1, 0)
    assert report.total["events"] == 4
    assert report.total["net_tokens"] == 2 * 998 + 2 * 592 + 2 * 60
    assert report.prices.startswith("genai-prices ")
    doc = report.to_dict()
    assert doc["assumptions"] and any("no observed drop" in n for n in doc["notes"])


def test_a_session_filter_and_an_unknown_agent(store: Path, config: Path) -> None:
    with Store(store, read_only=True) as s:
        only = removal_ledger(s, config, session="test:openai")
        assert only["session"].to_list() == ["test:openai"]
        with pytest.raises(Exception, match="no session of agent 'codex'"):
            removal_ledger(s, config, agent="codex")


def test_the_cli_prints_the_summary_the_removals_and_the_json(
    store: Path, config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from calib.cli.app import app

    run = CliRunner()
    result = run.invoke(app, ["savings", "--db", str(store), "--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    required = {"agent", "session", "call", "kind", "removed_estimated", "removed_observed", "paid_off_after",
                "net_tokens", "net_usd"}  # fmt: skip
    assert all(required <= set(e) for e in doc["events"]) and len(doc["events"]) == 4
    assert doc["total"]["events"] == 4 and doc["assumptions"]

    args = ["savings", "--db", str(store), "--config", str(config)]
    result = run.invoke(app, args, env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "largest net saving" in out and "largest net loss" in out
    assert "test:anthropic.jsonl" in out and "never" in out
    assert "Prices: genai-prices 0.2.3 (offline)" in out
    result = run.invoke(app, [*args, "--session", "test:openai"], env={"COLUMNS": "220"})
    assert "every removal" in result.stdout and "test:openai.jsonl" in result.stdout

    monkeypatch.chdir(tmp_path)  # no calibration.json here
    result = run.invoke(app, ["savings", "--db", str(store)])
    assert result.exit_code != 0
    assert "no calibration to count with: calibration.json is not in this folder" in result.output


def test_without_every_removal_the_session_carries_them_all(store: Path, config: Path) -> None:
    from calib.analysis.context import load_calibration
    from calib.analysis.removals import ledger_calls, removal_events, without_removals

    estimator = load_calibration(config)[1]
    with Store(store, read_only=True) as s:
        calls = ledger_calls(s, estimator, session="test:anthropic")
        frame = without_removals(calls, removal_events(s, estimator, calls))
    # the prune's 998 tokens from call 3 on; with the compaction undone too, its 592 from call 5 on
    assert frame["input"].to_list() == [1100, 2150, 2290, 1532, 1672, 1220, 1360]
    assert frame["input_without"].to_list() == [1100, 2150, 2290, 2530, 2670, 2810, 2950]
    recorded, without = frame["usd_input"].to_list(), frame["usd_input_without"].to_list()
    assert recorded[:3] == without[:3]
    # call 5 without the compaction reads all of call 4's 2,670 cached tokens and writes 140
    row = {"provider": "anthropic", "model": "claude-sonnet-4-5", "ctx": 2810, "cache_read": 2670,
           "cache_write": 140, "ts": T0 + 5 * MINUTE}  # fmt: skip
    price = price_book().price(row, 40)
    assert price is not None and without[5] == pytest.approx(float(price[0]))


def test_the_report_has_a_removals_section_and_a_figure_per_agent(
    store: Path, config: Path, tmp_path: Path
) -> None:
    from calib.analysis.report import run_report

    result = run_report(store, out=tmp_path / "report", config=config, figures=True)
    summary = json.loads((tmp_path / "report" / "summary.json").read_text(encoding="utf-8"))
    savings = summary["savings"]
    assert savings["total"]["events"] == 4
    assert [t["agent"] for t in savings["timelines"]] == ["test"]
    assert savings["largest_loss"][0]["file"] == "test:openai.jsonl"
    assert savings["largest_loss"][0]["call"] == 2
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "## Removals: what they saved" in markdown and "![test: input per call" in markdown
    assert (tmp_path / "report" / "savings_test.png").is_file()
    assert "savings_test.png" in result.files

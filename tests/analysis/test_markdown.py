from __future__ import annotations

import json
from pathlib import Path

import pytest
from analysis.biased_sessions import biased_session
from analysis.sessions import kinds_session, unrecorded_session

from calib.analysis.markdown import render_markdown
from calib.analysis.report import run_report
from calib.analysis.summary import FIGURES
from calib.store.store import Store


def test_markdown_is_made_from_the_summary_only(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    with Store(db) as s:
        s.write([kinds_session()])
    out = tmp_path / "report"
    result = run_report(db, out=out, estimators=["chars4", "cjk"], figures=False)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert markdown == render_markdown(summary)
    assert result.files == ["summary.json", "report.md"]
    assert "![" not in markdown  # no figures were drawn, so none is linked
    for group in summary["groups"]:
        assert f"{group['delta_mae']:.1f}" in markdown
        assert f"{group['delta_bias']:.3f}" in markdown


def test_markdown_shows_both_views_the_whole_prompt_estimates_and_the_largest_misses(tmp_path: Path) -> None:
    long_path = "/home/someone/.gemini/tmp/0123456789abcdef/chats/session-2026-02-01T10-00-abcdef.json"
    db = tmp_path / "m.duckdb"
    with Store(db) as s:
        s.write([unrecorded_session("t:a", (2000,)), unrecorded_session("t:b", (-600,), path=long_path)])
    out = tmp_path / "report"
    run_report(db, out=out, estimators=["chars4", "cjk"], figures=False)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert markdown == render_markdown(summary)  # the summary read back (keys sorted) renders the same
    assert "*Scored* figures" in markdown and "*End-to-end* figures" in markdown

    def section(title: str) -> list[str]:
        start = markdown.index(f"## {title}\n")
        end = markdown.find("\n## ", start + 1)
        return markdown[start : None if end < 0 else end].splitlines()

    overall = {r["estimator"]: r for r in summary["overall"]}
    header = next(line for line in section("Overall") if line.startswith("| estimator"))
    assert "| coverage |" in header and "| e2e calls | e2e err p50 | e2e err p90 | e2e err p99 |" in header
    chars4_row = next(line for line in section("Overall") if "`chars4`" in line)
    c = overall["chars4"]
    assert c["e2e_calls"] == 14 and c["coverage"] == pytest.approx(10 / 12, rel=1e-5)
    assert chars4_row.endswith(
        f"| 83.3% | {c['delta_mae']:.1f} | {c['delta_bias']:.3f} | {c['ctx_err_p50'] * 100:.3f}% | "
        f"{c['ctx_err_p90'] * 100:.3f}% | {c['ctx_err_p99'] * 100:.3f}% | 14 | {c['e2e_err_p50'] * 100:.3f}% | "
        f"{c['e2e_err_p90'] * 100:.3f}% | {c['e2e_err_p99'] * 100:.3f}% |"
    )
    group = next(g for g in summary["groups"] if g["estimator"] == "cjk")
    group_row = next(line for line in section("Error by estimator, provider and model") if "`cjk`" in line)
    assert f"| {group['e2e_err_p90'] * 100:.3f}% | {group['e2e_err_p99'] * 100:.3f}% |" in group_row

    whole = section("Whole-prompt estimates")
    p50, p90 = group["full_err_p50"] * 100, group["full_err_p90"] * 100
    assert "| openai / m1 | 2 |" in next(line for line in whole if line.startswith("| openai / m1"))
    assert f"| {p50:.2f}% / {p90:.2f}% |" in next(line for line in whole if line.startswith("| openai / m1"))

    breaks = section("Chain breaks by reason")
    assert "| unrecorded (count) | negative_delta (count) |" in breaks[2]
    assert breaks[4] == "| openai / m1 | 10 | 83.3% | 0 | 2 | 2 | 1 | 1 |"
    assert any("`unrecorded`, `negative_delta` (marked *(count)*) are found only" in line for line in breaks)

    misses = section("Largest misses")
    assert (
        "among the 14 end-to-end calls of `chars4`: 1 `unrecorded` (7.14%), 1 `negative_delta` (7.14%)."
        in ("\n".join(misses))
    )
    assert any("grows with nothing appended and nothing carried (`unrecorded`)" in line for line in misses)
    largest = summary["misses"]["largest"]
    assert [m["file"] for m in largest] == ["/logs/t:a.jsonl", long_path]  # summary.json keeps the full path
    rows = [line for line in misses if line.startswith("| `")]
    ctx = largest[0]["ctx"]
    assert rows[0] == f"| `/logs/t:a.jsonl` | 6 | unrecorded | {ctx:,} | {ctx - 2000:,} | -{2000 / ctx:.2%} |"
    assert rows[1].startswith("| `…/session-2026-02-01T10-00-abcdef.json` | 6 | negative_delta |")
    assert rows[1].endswith(f"| {600 / largest[1]['ctx']:.2%} |")


def test_a_store_without_such_breaks_says_so_and_lists_none(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    with Store(db) as s:
        s.write([kinds_session()])
    summary = run_report(db, out=tmp_path / "r", estimators=["chars4"], figures=False).summary
    assert summary["misses"]["largest"] == []
    markdown = render_markdown(summary)
    start = markdown.index("## Largest misses")
    assert markdown[start:].splitlines()[2] == (
        "Breaks found only from the provider's count, among the 6 end-to-end calls of `chars4`: "
        "0 `unrecorded` (0.00%), 0 `negative_delta` (0.00%)."
    )
    assert "| file | call |" not in markdown


def test_markdown_links_every_figure_it_draws_and_says_what_to_read_off_the_new_ones(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    with Store(db) as s:
        s.write(
            [
                *(biased_session(f"t:a{i}", model="m1", calls=24, factor=2.0) for i in range(2)),
                biased_session("t:c", model="m3", calls=4),
            ]
        )
    out = tmp_path / "report"
    result = run_report(db, out=out, estimators=["chars4"])
    markdown = (out / "report.md").read_text(encoding="utf-8")
    pngs = [name for name in result.files if name.endswith(".png")]
    assert {FIGURES["models"], FIGURES["position"]} <= set(pngs)
    for name in pngs:
        assert f"]({name})" in markdown, name
        assert (out / name).is_file()
    model = result.summary["model_error"][0]
    assert "Read it row by row: for each provider/model with at least 10 scored calls" in markdown
    assert "1 provider/model is in the table only, with fewer calls." in markdown
    assert (
        f"Largest median miss: `chars4` on openai / m1, {model['p50'] * 100:.3f}% over 46 scored calls."
        in markdown
    )
    assert "## Error as the context grows" in markdown
    # chars4 counts half of every appended output, in the smallest band as in the largest
    assert (
        "Median estimate / actual of the appended text at 4k-8k and at 16k-32k tokens: `chars4` 0.50 → 0.50."
        in markdown
    )
    assert "Read across a row to see which estimator gets that kind of text wrong" in markdown


def test_a_summary_from_before_the_new_figures_still_renders(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    with Store(db) as s:
        s.write([kinds_session()])
    summary = run_report(db, out=tmp_path / "r", estimators=["chars4"], figures=False).summary
    old = {k: v for k, v in summary.items() if k not in ("model_error", "position_error", "min_figure_calls")}
    old["content_kinds"] = [
        {k: v for k, v in r.items() if k not in ("append_bias", "append_calls")}
        for r in summary["content_kinds"]
    ]
    old["figures"] = [FIGURES[k] for k in ("models", "position", "kinds")]
    markdown = render_markdown(old)
    assert "Cells: delta bias of the calls of that kind / delta MAE" in markdown
    assert "## Error as the context grows" in markdown and "Largest median miss" not in markdown

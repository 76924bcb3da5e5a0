"""`calib bench`: the offline corpus and the estimator section (no timing assertions)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from calib.analysis import bench
from calib.analysis.bench import CONTENT_TYPES, SECTIONS, BenchContext, BenchSection, build_corpus, run_bench
from calib.cli.app import app
from calib.core.errors import EstimatorError, UsageError
from calib.estimators.charclass import class_counts


def test_corpus_is_deterministic_mixed_and_sized() -> None:
    first = build_corpus(quick=True)
    second = build_corpus(quick=True)
    assert first.sha256() == second.sha256()
    assert first.all() == second.all()
    for kind in CONTENT_TYPES:
        size = first.utf8_bytes(kind)
        assert 125_000 <= size < 135_000, (kind, size)
        assert all(0 < len(doc) <= 4000 for doc in first.docs[kind])
    cjk = class_counts(first.docs["cjk"]).sum().row(0, named=True)
    assert cjk["cjk"] / sum(cjk.values()) > 0.4  # mostly CJK, with the ASCII such text carries
    code = "".join(first.docs["code"])
    assert "def " in code and "import " in code
    assert '"id": "' in "".join(first.docs["json"])
    full = build_corpus()
    assert 3_900_000 < full.utf8_bytes() < 4_300_000


def test_estimator_section_measures_each_named_estimator() -> None:
    report = run_bench(estimators=["chars4", "tiktoken:cl100k_base"], quick=True, sections=["estimators"])
    (section,) = report.sections
    assert section.name == "estimators"
    rows = {row["estimator"]: row for row in section.rows}
    assert set(rows) == {"chars4", "tiktoken:cl100k_base"}
    for row in rows.values():
        assert row["mb_s"] > 0
        assert set(section.columns) <= set(row)
    # length/4 on mostly-BMP text is a quarter token per character, give or take rounding
    assert all(0.249 < rows["chars4"][f"tok_per_char_{k}"] < 0.252 for k in CONTENT_TYPES)
    assert rows["chars4"]["raw_mb_s"] is None
    tiktoken_row = rows["tiktoken:cl100k_base"]
    assert tiktoken_row["raw_mb_s"] > 0 and tiktoken_row["note"].startswith("calib/raw ")
    assert tiktoken_row["tok_per_char_cjk"] > tiktoken_row["tok_per_char_english"]
    document = report.to_dict()
    json.dumps(document)
    assert document["corpus"]["types"]["cjk"]["docs"] > 0


def test_counting_section_times_the_stores_first_count_of_each_estimator_and_all_together() -> None:
    report = run_bench(estimators=["chars4", "tiktoken:o200k_base"], quick=True, sections=["counting"])
    (section,) = report.sections
    assert section.name == "counting"
    rows = {row["estimators"]: row for row in section.rows}
    assert list(rows) == ["chars4", "tiktoken:o200k_base", "all 2 together"]
    for row in rows.values():
        assert row["mb_s"] > 0 and row["count_many_mb_s"] > 0
        assert row["share"] == pytest.approx(row["mb_s"] / row["count_many_mb_s"])
    # together, count_many's time is the sum of each estimator's alone
    together = 1 / rows["all 2 together"]["count_many_mb_s"]
    assert together == pytest.approx(
        sum(1 / rows[n]["count_many_mb_s"] for n in ("chars4", "tiktoken:o200k_base"))
    )
    json.dumps(report.to_dict())


def test_counting_section_defaults_to_what_calib_score_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    from calib.analysis import bench_counting

    monkeypatch.setattr(bench_counting, "DEFAULT_SCORE_SET", ("chars4", "cjk", "hf:/no/such/tokenizer.json"))
    (section,) = run_bench(quick=True, sections=["counting"]).sections
    # a member that cannot load here is left out, as `calib score` leaves it out
    assert [row["estimators"] for row in section.rows] == ["chars4", "cjk", "all 2 together"]


def test_unknown_estimator_or_section_is_an_error() -> None:
    with pytest.raises(EstimatorError, match="unknown estimator"):
        run_bench(estimators=["nope"], quick=True)
    with pytest.raises(UsageError, match="unknown bench section"):
        run_bench(sections=["nope"], quick=True)


def test_a_section_can_be_added(monkeypatch: pytest.MonkeyPatch) -> None:
    def docs_section(ctx: BenchContext) -> BenchSection:
        return BenchSection(
            "docs",
            "Documents",
            ["type", "docs"],
            rows=[{"type": k, "docs": len(ctx.corpus.docs[k])} for k in CONTENT_TYPES],
        )

    monkeypatch.setitem(SECTIONS, "docs", docs_section)
    report = run_bench(quick=True, sections=["docs"])
    assert [s.name for s in report.sections] == ["docs"]
    assert report.to_dict()["sections"]["docs"]["rows"][0]["type"] == "english"


def test_bench_command_prints_one_json_document() -> None:
    result = CliRunner().invoke(app, ["bench", "--json", "--quick", "--estimator", "chars4", "-e", "cjk"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    rows = document["sections"]["estimators"]["rows"]
    assert [r["estimator"] for r in rows] == ["chars4", "cjk"]
    table = CliRunner().invoke(app, ["bench", "--quick", "-e", "chars4"])
    assert table.exit_code == 0 and "chars4" in table.stdout and "MB/s" in table.stdout
    bad = CliRunner().invoke(app, ["bench", "--quick", "-e", "nope"])
    assert bad.exit_code == 2  # an unknown estimator is a usage error


def test_runtime_section_times_python_and_node_on_the_quick_corpus() -> None:
    report = run_bench(quick=True, sections=["runtime"])
    (section,) = report.sections
    assert section.name == "runtime"
    rates = [f"mb_s_{k}" for k in (*CONTENT_TYPES, "mix")]
    assert set(rates) <= set(section.columns)
    rows = {(row["runtime"], row["function"]): row for row in section.rows}
    for function in ("count", "class_counts"):
        assert all(rows["python", function][rate] > 0 for rate in rates)
    if shutil.which("node") is None:
        assert rows["node", None]["note"] == "node was not found on PATH"
        return
    assert list(rows) == [
        ("python", "count"),
        ("python", "class_counts"),
        ("node", "count"),
        ("node", "classCounts"),
    ]
    for function in ("count", "classCounts"):
        assert all(rows["node", function][rate] > 0 for rate in rates)
        assert rows["node", function]["note"] == "same counts"  # Node's totals over the corpus equal Python's
    assert "Node v" in section.notes[0]
    json.dumps(report.to_dict())


def test_runtime_section_without_node_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    (section,) = run_bench(quick=True, sections=["runtime"]).sections
    assert [row["runtime"] for row in section.rows] == ["python", "python", "node"]
    node = section.rows[-1]
    assert node["note"] == "node was not found on PATH"
    assert all(node[f"mb_s_{k}"] is None for k in (*CONTENT_TYPES, "mix"))


def test_bench_command_runs_the_sections_named() -> None:
    result = CliRunner().invoke(app, ["bench", "--quick", "--section", "runtime", "--json"])
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["sections"]) == ["runtime"]
    table = CliRunner().invoke(app, ["bench", "--quick", "-s", "runtime"])
    assert table.exit_code == 0 and "class_counts" in table.stdout and "Runtime: MB/s" in table.stdout
    bad = CliRunner().invoke(app, ["bench", "--quick", "--section", "nope"])
    assert bad.exit_code == 2
    assert (
        bad.stderr == "Error: unknown bench section 'nope'; valid sections: estimators, counting, runtime\n"
    )
    help_text = CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "200"}).stdout
    assert "--section" in help_text and "estimators, counting, runtime" in " ".join(
        help_text.replace("│", " ").split()
    )

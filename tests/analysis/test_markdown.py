from __future__ import annotations

import json
from pathlib import Path

from analysis.sessions import kinds_session

from calib.analysis.markdown import render_markdown
from calib.analysis.report import run_report
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

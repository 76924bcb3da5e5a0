from __future__ import annotations

import json
from pathlib import Path

import pytest

from calib.analysis.summary import SUMMARY_FORMAT, dumps_summary, load_summary
from calib.core.errors import BaselineError, InputError


def test_dumps_summary_is_canonical() -> None:
    summary = {"b": [1.23456789, float("nan")], "a": {"x": -0.0, "y": 12345.678, "z": "é"}}
    text = dumps_summary(summary)
    assert text.endswith("}\n")
    assert json.loads(text) == {"a": {"x": 0.0, "y": 12345.7, "z": "é"}, "b": [1.23457, None]}
    assert text.index('"a"') < text.index('"b"') and "é" in text and "-0.0" not in text
    assert dumps_summary(json.loads(text)) == text  # reading and writing it again changes nothing


def test_load_summary_reads_what_dumps_summary_wrote(tmp_path: Path) -> None:
    group = {
        "estimator": "chars4",
        "calls": 3,
        "delta_mae": 1.5,
        "ctx_err_p90": 0.01,
        "delta_bias": 0.9,
        "e2e_calls": 4,
        "e2e_err_p90": 0.2,
    }
    doc = {"format": SUMMARY_FORMAT, "groups": [group]}
    path = tmp_path / "summary.json"
    path.write_text(dumps_summary(doc), encoding="utf-8")
    assert load_summary(path) == doc
    # a summary written before the end-to-end figures is refused, naming the file and what to do
    del group["e2e_calls"], group["e2e_err_p90"]
    path.write_text(dumps_summary(doc), encoding="utf-8")
    with pytest.raises(BaselineError) as err:
        load_summary(path)
    assert str(err.value) == (
        "malformed baseline: groups[0].e2e_calls is missing (the baseline predates the end-to-end "
        f"figures) ({path}); regenerate it with `calib report` (the summary.json it writes)"
    )
    group.update(e2e_calls=True, e2e_err_p90=0.2)
    path.write_text(dumps_summary(doc), encoding="utf-8")
    with pytest.raises(BaselineError, match=r"groups\[0\]\.e2e_calls is not a count of calls \(true\)"):
        load_summary(path)


def test_load_summary_rejects_what_is_not_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "calib-report/1",\n  "groups": [', encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_summary(bad)
    assert err.value.line == 2
    other = tmp_path / "calibration.json"
    other.write_text('{"schema_version": 1}', encoding="utf-8")
    with pytest.raises(InputError, match="not a calib report summary"):
        load_summary(other)
    with pytest.raises(InputError, match="cannot read the baseline"):
        load_summary(tmp_path / "absent.json")

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT

NOTEBOOK = ROOT / "notebooks" / "explore.ipynb"
SAMPLE = ROOT / "datasets" / "sample"


def test_explore_notebook_runs_top_to_bottom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the dev extra (nbformat)")
    nbclient = pytest.importorskip("nbclient", reason="the notebook test needs the dev extra (nbclient)")
    pytest.importorskip("ipykernel", reason="the notebook test needs the dev extra (ipykernel)")
    if not SAMPLE.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {SAMPLE} (run `make sample`)")
    # the kernel inherits the environment: keep it offline and its scratch files in tmp_path
    monkeypatch.setenv("CALIB_SAMPLE", str(SAMPLE))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # "python3" resolves to the interpreter running the tests, i.e. the project's venv
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails

    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    images = [out for out in outputs if "image/png" in out.get("data", {})]
    assert len(images) >= 4  # every plot cell drew its figure
    text = "\n".join(out.get("text", "") for out in outputs if out.output_type == "stream")
    assert re.search(r"^[1-9]\d* sessions, [1-9]\d* calls, [1-9]\d* parts$", text, re.MULTILINE)
    assert "gate PASS: 0 regressions" in text
    # the notebook is committed without outputs, so diffs stay readable
    committed = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in committed.cells if c.cell_type == "code")

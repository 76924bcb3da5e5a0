"""calib as its users get it: one version everywhere, and a wheel that works outside the checkout.

The wheel is built the way `make dist` builds it (an sdist, then the wheel from that sdist), installed
into a new virtualenv in a temporary folder, and run there on the bundled sample. Its dependencies are
the development environment's, made visible to the new virtualenv by a path file, so the test needs
no network; calib itself comes only from the wheel (asserted), so a file missing from the package
data fails here and not on a user's machine.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers import ROOT

from calib.core.version import __version__
from calib.importers import importer_names

PACKAGE = ROOT / "calib"
SAMPLE = ROOT / "datasets" / "sample"
# In the repository beside the package, not part of it: the npm package's own sources.
NOT_SHIPPED = {"runtime-npm"}


def _changelog_versions() -> list[str]:
    text = (PACKAGE / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## (\d+\.\d+\.\d+\S*) \(\d{4}-\d{2}-\d{2}\)$", text, flags=re.MULTILINE)


def test_one_version_in_the_code_the_metadata_and_the_changelog() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "calib.core.version.__version__"}
    # the development install's metadata (make reinstalls when version.py changes)
    assert importlib.metadata.version("calib") == __version__
    versions = _changelog_versions()
    assert versions, "calib/CHANGELOG.md has no '## X.Y.Z (YYYY-MM-DD)' heading"
    assert versions[0] == __version__, (
        "a version change comes with its entry at the top of calib/CHANGELOG.md"
    )
    assert len(set(versions)) == len(versions)


def test_the_npm_package_has_calibs_version() -> None:
    manifest = json.loads((PACKAGE / "runtime-npm" / "package.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "calib-runtime"
    assert manifest["version"] == __version__


def _package_files() -> set[str]:
    """Every file of the package in the checkout, as paths inside a wheel."""
    files = set()
    for path in PACKAGE.rglob("*"):
        relative = path.relative_to(ROOT)
        if (
            path.is_file()
            and "__pycache__" not in relative.parts
            and path.suffix != ".pyc"
            and relative.parts[1] not in NOT_SHIPPED
        ):
            files.add(relative.as_posix())
    return files


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel, built from a copy of the sources (the checkout is not written)."""
    if importlib.util.find_spec("build") is None:
        pytest.skip("the `build` package is not installed (it is in the dev extra: make test installs it)")
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(PACKAGE, source / "calib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: setuptools from this environment, not from the network
    run = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (wheel,) = out.glob("calib-*.whl")
    (sdist,) = out.glob("calib-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.mark.slow
def test_the_wheel_and_the_sdist_hold_every_file_of_the_package(built: dict[str, Path]) -> None:
    wheel = built["wheel"]
    assert wheel.name == f"calib-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"calib-{__version__}.dist-info/METADATA").decode()
        entry_points = archive.read(f"calib-{__version__}.dist-info/entry_points.txt").decode()
    package = _package_files()
    assert {name for name in names if name.startswith("calib/")} == package
    for data in (
        "calib/store/migrations/001_core.sql",
        "calib/core/calibration.schema.json",
        "calib/runtime.ts",
        "calib/calib-runtime.mjs",
        "calib/calib-runtime.d.mts",
        "calib/CHANGELOG.md",
        "calib/py.typed",
    ):
        assert data in package
    assert f"Version: {__version__}" in metadata
    assert "License-Expression: MIT" in metadata
    for extra in ("hf", "report", "gemini", "claude", "transformers"):
        assert f"Provides-Extra: {extra}" in metadata
    assert "calib = calib.cli:main" in entry_points

    with tarfile.open(built["sdist"]) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert package <= members
    assert {"pyproject.toml", "README.md"} <= members


def _fresh_virtualenv(root: Path, wheel: Path) -> Path:
    """A new virtualenv holding the wheel; the dependencies are borrowed from this environment."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index"]
    subprocess.run([*install, "--no-deps", str(wheel)], check=True)
    fresh = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A path file adds the development site-packages after the new one. The editable install of the
    # checkout in there is not activated: path files are read only in site directories.
    borrowed = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(fresh, "_calib_test_dependencies.pth").write_text("\n".join(sorted(borrowed)) + "\n")
    check = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    return venv


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "CALIB_DB"}}
    env["HOME"] = str(cwd)  # nothing of the user's own agents
    run = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, f"{args}: {run.stdout[-2000:]}{run.stderr[-2000:]}"
    return run


@pytest.mark.slow
def test_the_installed_wheel_fits_reports_and_exports_outside_the_checkout(
    built: dict[str, Path], tmp_path: Path
) -> None:
    venv = _fresh_virtualenv(tmp_path, built["wheel"])
    calib, python = venv / "bin" / "calib", venv / "bin" / "python"
    work = tmp_path / "work"
    work.mkdir()

    where = _run(
        [python, "-c", "import calib, importlib.metadata as m; print(calib.__file__, m.version('calib'))"],
        work,
    )
    location, metadata_version = where.stdout.split()
    assert Path(location).is_relative_to(venv), "calib must come from the wheel, not the checkout"
    assert metadata_version == __version__
    assert _run([calib, "--version"], work).stdout == f"calib {metadata_version}\n"

    _run([calib, "fit", SAMPLE, "--db", "sample.duckdb", "--out", "calibration.json"], work)
    config = json.loads((work / "calibration.json").read_text())
    assert config["fit"]["calib_version"] == __version__
    assert {"anthropic", "google", "openai"} <= set(config["providers"])

    report = _run([calib, "report", "--db", "sample.duckdb", "--out", "report"], work)
    assert "wrote summary.json, report.md" in report.stdout
    summary = json.loads((work / "report" / "summary.json").read_text())
    assert set(summary["store"]["sessions_by_tool"]) == set(importer_names())  # the sample holds every agent
    assert (work / "report" / "per_model_error.png").stat().st_size > 0

    for runtime, shipped in (
        ("js", "calib-runtime.mjs"),
        ("ts", "calib-runtime.ts"),
        ("py", "calib_runtime.py"),
    ):
        _run(
            [calib, "export", "--runtime", runtime, f"vendor-{runtime}", "--config", "calibration.json"], work
        )
        assert (work / f"vendor-{runtime}" / shipped).stat().st_size > 0
    assert (work / "vendor-js" / "calib-runtime.mjs").read_bytes() == (
        PACKAGE / "calib-runtime.mjs"
    ).read_bytes()

    # the installed package fits what the checkout fits: the same store, the checkout's code
    _run([sys.executable, "-m", "calib", "fit", "--db", "sample.duckdb", "--out", "checkout.json"], work)
    assert (work / "checkout.json").read_bytes() == (work / "calibration.json").read_bytes()

"""Every command answers `--help` and names its options; the commands are listed in their order; the
options that take a registry's names list every one of them."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from calib.analysis.build import REPORT_ESTIMATORS
from calib.cli.app import app
from calib.estimators import ALL_ESTIMATORS, DEFAULT_SCORE_SET, EstimatorSpec, specs
from calib.importers import importer_names
from calib.synth import DEFAULT_LAYOUT, TOOLS, layouts

OPTIONS = {
    "ingest": ["--format", "--full", "--db", "--json", "--quiet"],
    "estimators": ["--db", "--json"],
    "bench": ["--estimator", "--section", "--quick", "--db", "--json", "--quiet"],
    "score": ["--estimator", "--config", "--sessions", "--calls", "--overall", "--db", "--json", "--quiet"],
    "fit": ["--base", "--out", "--holdout", "--format", "--db", "--json", "--quiet"],
    "sample": ["--tool", "--out", "--layout", "--sessions", "--seed", "--json"],
    "report": [
        "--out",
        "--estimator",
        "--config",
        "--fit",
        "--base",
        "--figures",
        "--replay-window",
        "--baseline",
        "--max-regression",
        "--fail-on-new-group",
        "--db",
        "--json",
        "--quiet",
    ],
    "replay": ["--estimator", "--policy", "--rule", "--windows", "--window", "--db", "--json", "--quiet"],
    "context": [
        "--session",
        "--call",
        "--all",
        "--config",
        "--window",
        "--windows",
        "--db",
        "--json",
        "--quiet",
    ],
    "savings": ["--session", "--agent", "--config", "--what-if", "--db", "--json"],
    "cost": ["--by", "--session", "--agent", "--db", "--json"],
    "export": ["--parquet", "--runtime", "--config", "--db", "--json", "--quiet"],
}


def _help(*args: str) -> str:
    result = CliRunner().invoke(
        app, [*args, "--help"], env={"COLUMNS": "200"}
    )  # rich reads the width from COLUMNS
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_registered_command_has_a_help_test() -> None:
    group = typer.main.get_group(app)
    assert list(group.commands) == list(OPTIONS)


def test_the_top_level_help_lists_the_commands_in_order() -> None:
    text = _help()
    panel = text[text.index("Commands") :]
    listed = re.findall(r"^│ ([a-z]+) ", panel, flags=re.MULTILINE)
    assert listed == list(OPTIONS)
    assert "--debug" in text


@pytest.mark.parametrize("command", list(OPTIONS))
def test_help_names_the_options(command: str) -> None:
    text = _help(command)
    missing = [option for option in OPTIONS[command] if option not in text]
    assert not missing


def test_bench_has_no_ingest_benchmark_options() -> None:
    text = _help("bench")
    assert not [option for option in ("--ingest", "--corpus", "--ccusage") if option in text]


def _names(text: str) -> set[str]:
    """The words of a help text, as a registry's names are written in it (between commas, spaces,
    brackets and the panel's borders, a full stop after the last)."""
    return {word.rstrip(".") for word in re.split(r"[\s,;()│]+", text)} - {""}


def _option_help(text: str, option: str) -> str:
    """The help of `option` in a command's help panel, its lines joined."""
    rows = text[text.index("Options") :].splitlines()
    start = next(i for i, row in enumerate(rows) if re.search(rf"│\s*(\*\s*)?{option}\b", row))
    block = [rows[start]]
    for row in rows[start + 1 :]:
        if re.match(r"│\s*(\*\s*)?-", row) or not row.startswith("│"):
            break
        block.append(row)
    return " ".join(block)


@pytest.mark.parametrize("command", ["ingest", "fit"])
@pytest.mark.parametrize("name", importer_names())
def test_format_lists_every_importer(command: str, name: str) -> None:
    assert name in _names(_option_help(_help(command), "--format"))


# Every command with `--estimator`; `calib report` takes calibrations with --config instead.
ESTIMATOR_COMMANDS = {"score": True, "report": False, "bench": True, "replay": True}


def _estimator_cases() -> list[tuple[str, EstimatorSpec]]:
    return [
        (command, spec)
        for command, calibrated in ESTIMATOR_COMMANDS.items()
        for spec in specs()
        if calibrated or spec.family != "calibrated"
    ]


@pytest.mark.parametrize(
    ("command", "spec"), _estimator_cases(), ids=lambda v: v if isinstance(v, str) else v.name
)
def test_estimator_lists_every_registry_name(command: str, spec: EstimatorSpec) -> None:
    words = _names(_option_help(_help(command), "--estimator"))
    if spec.is_family:  # written with its argument: hf:PATH, cjk:W
        assert [w for w in words if w.startswith(spec.name) and w[len(spec.name) :].isupper()]
    else:
        assert spec.name in words


@pytest.mark.parametrize("command", ["fit", "report"])
def test_base_lists_every_estimator_a_calibration_can_start_from(command: str) -> None:
    words = _names(_option_help(_help(command), "--base"))
    for spec in specs():
        if spec.family == "calibrated":
            assert not [w for w in words if w.startswith("calibrated:")]
        elif spec.is_family:
            assert [w for w in words if w.startswith(spec.name) and w[len(spec.name) :].isupper()], spec.name
        else:
            assert spec.name in words


def test_report_leaves_out_calibrated_estimators() -> None:
    assert not [
        w for w in _names(_option_help(_help("report"), "--estimator")) if w.startswith("calibrated:")
    ]


def test_report_states_its_default_estimators() -> None:
    text = _option_help(_help("report"), "--estimator")
    default = text[text.index("default:") : text.index("Names:")]
    assert set(REPORT_ESTIMATORS) <= _names(default)


def test_score_states_its_default_set_and_all() -> None:
    text = _help("score")
    option = _option_help(text, "--estimator")
    default = option[option.index("default:") : option.index("Names:")]
    assert set(DEFAULT_SCORE_SET) <= _names(default)
    assert f"`{ALL_ESTIMATORS}`: every fixed-name one" in " ".join(re.split(r"[\s│]+", default))
    # the command's description says the same, and what --config adds
    description = text[: text.index("Options")]
    assert set(DEFAULT_SCORE_SET) <= _names(description.replace("│", " "))
    assert "-e all" in description
    assert "calibrated:PATH" in _option_help(text, "--config")


@pytest.mark.parametrize("tool", TOOLS)
def test_sample_lists_every_tool_and_its_layouts(tool: str) -> None:
    text = _help("sample")
    assert tool in _names(_option_help(text, "--tool"))
    layout_help = _option_help(text, "--layout")
    assert set(layouts(tool)) <= _names(layout_help)
    assert f"{DEFAULT_LAYOUT[tool]} (default)" in re.sub(r"(?:\s*│\s*)+", " ", layout_help)


def test_starting_the_cli_loads_no_registry() -> None:
    # the names are read when a command's help is shown: the synth writers alone cost ~50 ms, and
    # the bench's counting section (DuckDB, pyarrow: ~150 ms) is imported only when it runs
    heavy = ("calib.synth", "calib.importers", "calib.scoring", "duckdb", "pyarrow")
    code = f"import sys, calib.cli.app; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

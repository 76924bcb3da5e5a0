"""JSON calib reads: the files a user names (a calibration config through `--config` or `-e calibrated:`,
a `--baseline`, a `replay --windows` file, `-e charclass:` weights) and the tool outputs in the store that `calib report`
classifies.

Every JSON file named on the command line is read by one reader (`calib.core.jsonfile`): a file that is
missing, not UTF-8, not JSON, nested deeper than calib reads, or holding a number that is not finite is
one line naming the file (and line), and never a traceback. A tool output nested thousands deep is
classified like any other text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from faults.kit import counts, error_line, json_of, run_calib, session_files, tree_hashes

from calib.analysis.content import content_kind
from calib.analysis.summary import load_summary
from calib.analysis.windows import load_windows
from calib.calibration.vendor import read_config
from calib.core.config import load_config
from calib.core.errors import BaselineError, CalibError, ConfigError, EstimatorError
from calib.core.jsonfile import MAX_DEPTH, read_json_file
from calib.estimators import get_estimator

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "reports" / "baseline" / "calibration.json"  # a real config, as `calib fit` writes it
SUMMARY = REPO / "reports" / "baseline" / "summary.json"  # a real baseline, as `calib report` writes it

DEEP = "[" * 5000 + "]" * 5000  # Python's json module recurses once per level: past ~1,000 it crashes
REFIT = "re-export it with `calib fit`"
REGENERATE = "regenerate it with `calib report` (the summary.json it writes)"
WINDOWS_HINT = 'write {"model": {"context": N, "max_output": N}}'


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


# -- a tool output nested thousands deep, in the store -------------------------------------------------


def _replace_tool_outputs(root: Path, output: str) -> int:
    """Set every tool output of the gemini-cli sessions under `root` to `output`; how many were set."""
    changed = 0
    for log in session_files(root):
        lines = []
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            found = [record]
            while found:  # every `functionResponse` part, in the tool calls and in the messages
                item = found.pop()
                values = item.values() if isinstance(item, dict) else item if isinstance(item, list) else []
                found.extend(values)
                response = item.get("functionResponse") if isinstance(item, dict) else None
                if isinstance(response, dict) and isinstance(response.get("response"), dict):
                    response["response"]["output"] = output
                    changed += 1
            lines.append(json.dumps(record))
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def test_a_tool_output_nested_thousands_deep_is_classified(sessions: Path, tmp_path: Path) -> None:
    assert _replace_tool_outputs(sessions, DEEP) > 0
    db = tmp_path / "deep.duckdb"
    assert run_calib("ingest", sessions, "--db", db, "-q").returncode == 0
    stored = counts(db)
    out = tmp_path / "report"
    result = run_calib("report", "--db", db, "-e", "chars4", "--no-figures", "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    chars = json.loads((out / "summary.json").read_text(encoding="utf-8"))["content_chars"]
    # too deep to parse as JSON: counted as the tool output it is, not left out
    assert chars["tool_output"] >= len(DEEP) and chars["json"] == 0
    assert json_of(result)["out"] == str(out)
    assert counts(db) == stored


def test_json_nested_thousands_deep_is_classified_without_recursing() -> None:
    assert content_kind(DEEP, "tool_result") == "tool_output"
    assert content_kind(DEEP, "user_text") == "prose"
    assert content_kind(_nested(MAX_DEPTH), "tool_result") == "json"  # nesting a real output has
    assert content_kind(json.dumps({"text": DEEP}), "tool_result") == "json"  # brackets in a string


# -- the files a user names ------------------------------------------------------------------------------


def _gate(store: Path, tmp_path: Path, path: Path) -> list[str | Path]:
    return [
        "report",
        "--db",
        store,
        "-e",
        "chars4",
        "--no-figures",
        "--out",
        tmp_path / "r",
        "--baseline",
        path,
    ]


# (name, the command line reading `path`, what the message calls the file, what to do, exit code)
SITES: list[tuple[str, Callable[[Path, Path, Path], list[str | Path]], str, str, int]] = [
    (
        "report-config",
        lambda store, tmp, path: ["report", "--db", store, "-e", "chars4", "--no-figures", "--out", tmp / "r",
                                  "--config", path],
        "the calibration config",
        REFIT,
        1,
    ),
    (
        "calibrated",
        lambda store, tmp, path: ["score", "--db", store, "-e", f"calibrated:{path}"],
        "the calibration config",
        REFIT,
        1,
    ),
    ("baseline", _gate, "the baseline", REGENERATE, 2),
    (
        "windows",
        lambda store, tmp, path: ["replay", "--db", store, "-e", "chars4", "--windows", path],
        "the windows file",
        WINDOWS_HINT,
        1,
    ),
    (
        "runtime-config",
        lambda store, tmp, path: ["export", "--runtime", "py", tmp / "vendored", "--config", path],
        "the calibration config",
        REFIT,
        1,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("command", "what", "hint", "code"), [s[1:] for s in SITES], ids=[s[0] for s in SITES]
)
def test_json_nested_thousands_deep_is_one_line_at_every_file_option(
    command: Callable[[Path, Path, Path], list[str | Path]],
    what: str,
    hint: str,
    code: int,
    store_copy: Path,
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP, encoding="utf-8")
    stored, source = counts(store_copy), tree_hashes(path)
    result = run_calib(*command(store_copy, tmp_path, path))
    assert result.returncode == code
    assert error_line(result) == f"Error: {what} is nested deeper than {MAX_DEPTH} levels ({path}:1); {hint}"
    assert counts(store_copy) == stored and tree_hashes(path) == source
    assert not (tmp_path / "r").exists() and not (tmp_path / "vendored").exists()


def test_a_config_that_is_not_utf8_names_the_byte(store_copy: Path, tmp_path: Path) -> None:
    raw = CONFIG.read_bytes().replace(b'"charclass"', b'"charcl\xe4ss"', 1)
    path = tmp_path / "latin1.json"
    path.write_bytes(raw)
    offset = raw.index(b"\xe4")
    line = raw.count(b"\n", 0, offset) + 1
    result = run_calib("score", "--db", store_copy, "-e", f"calibrated:{path}")
    assert result.returncode == 1
    assert error_line(result) == (
        f"Error: the calibration config is not UTF-8 text: byte 0xe4 at offset {offset} ({path}:{line}); {REFIT}"
    )


def _with_number(token: str) -> tuple[str, int]:
    """The real config with one figure replaced by `token`, and the line it is on."""
    lines = CONFIG.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if '"message_overhead":' in line)
    lines[index] = lines[index].split(":")[0] + f": {token},"
    return "\n".join(lines) + "\n", index + 1


def test_a_config_number_past_the_largest_float_is_one_line(store_copy: Path, tmp_path: Path) -> None:
    text, line = _with_number("1e309")
    path = tmp_path / "huge.json"
    path.write_text(text, encoding="utf-8")
    result = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--config", path,
                       "--out", tmp_path / "r")  # fmt: skip
    assert result.returncode == 1
    assert error_line(result) == (
        f"Error: the calibration config holds a number that is not finite: 1e309 ({path}:{line}); {REFIT}"
    )
    assert not (tmp_path / "r").exists()


# -- the one reader, behind each of them ----------------------------------------------------------------

# (name, the public function reading a file, what the message calls it, what to do with its content,
# the error class)
READERS: list[tuple[str, Callable[[Path], Any], str, str, type[CalibError]]] = [
    ("load_config", load_config, "the calibration config", REFIT, ConfigError),
    ("read_config", read_config, "the calibration config", REFIT, ConfigError),
    ("load_summary", load_summary, "the baseline", REGENERATE, BaselineError),
    ("load_windows", load_windows, "the windows file", WINDOWS_HINT, ConfigError),
    (
        "charclass",
        lambda path: get_estimator(f"charclass:{path}"),
        "the charclass weights file",
        'write {"weights": {"letters": 0.2, ...}, "intercept": 0}',
        EstimatorError,
    ),
]


@pytest.mark.parametrize(
    ("content", "message", "line"),
    [
        (b"[1, 2,\n  NaN]", "holds a number that is not finite: NaN", 2),
        (b'{"a":\n -Infinity}', "holds a number that is not finite: -Infinity", 2),
        (b'{"a": "1e999",\n "b": -1e400}', "holds a number that is not finite: -1e400", 2),
        (b'{"a": 1' + b"0" * 400 + b"}", "holds a number that is not finite: 1000000000000000000000…", 1),
        (b'{"a": 1,\n\n "b": [\n', "is not valid JSON: Expecting value", 4),
        (b'{"a": "caf\xc3"}', "is not UTF-8 text: byte 0xc3 at offset 10", 1),
        (b'{"a":\n' + _nested(MAX_DEPTH).encode(), f"is nested deeper than {MAX_DEPTH} levels", 2),
        (b'{"a": "' + b"[" * 5000 + b'",\n "b": 1e309}', "holds a number that is not finite: 1e309", 2),
    ],
    ids=[
        "nan",
        "infinity",
        "huge-float",
        "huge-int",
        "not-json",
        "not-utf8",
        "too-deep",
        "brackets-in-a-string",
    ],
)
@pytest.mark.parametrize(
    ("read", "what", "hint", "error"), [r[1:] for r in READERS], ids=[r[0] for r in READERS]
)
def test_every_reader_refuses_bad_json_on_one_line_naming_the_line(
    read: Callable[[Path], Any],
    what: str,
    hint: str,
    error: type[CalibError],
    content: bytes,
    message: str,
    line: int,
    tmp_path: Path,
) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(content)
    with pytest.raises(error) as raised:
        read(path)
    assert str(raised.value) == f"{what} {message} ({path}:{line}); {hint}"


def test_the_depth_limit_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "nested.json"
    path.write_text(" [" * MAX_DEPTH + "]" * MAX_DEPTH, encoding="utf-8")
    _, doc = read_json_file(path, "the file", hint="", fix="")
    for _ in range(MAX_DEPTH - 1):
        doc = doc[0]
    assert doc == []
    path.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_DEPTH} levels"):
        read_json_file(path, "the file", hint="", fix="")


def test_the_real_files_still_read() -> None:
    # version 2: no model of the sample counts with a tokenizer of its own (version 3 is written only then)
    assert load_config(CONFIG)["schema_version"] == 2
    assert read_config(CONFIG)[0] == CONFIG.read_bytes()
    assert load_summary(SUMMARY)["format"] == "calib-report/1"

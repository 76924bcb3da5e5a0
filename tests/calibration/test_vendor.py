"""`calib.calibration.vendor`: a runtime written beside its config, for an agent to vendor the two."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import calib
import calib.runtime as runtime
from calib.calibration.export import build_config
from calib.calibration.fit import fit
from calib.calibration.vendor import RUNTIMES, VendorResult, vendor_runtime
from calib.core.config import dumps
from calib.core.errors import CalibError, ConfigError, UsageError
from calib.ingest.pipeline import ingest
from calib.store.store import Store
from calib.synth import write_sample

PACKAGE = Path(calib.__file__).parent
# what each runtime writes besides the config and the guide, and the package file each one copies
OWN_FILES = {
    "ts": {"calib-runtime.ts": "runtime.ts"},
    "js": {"calib-runtime.mjs": "calib-runtime.mjs", "calib-runtime.d.mts": "calib-runtime.d.mts"},
    "py": {"calib_runtime.py": "runtime.py"},
}


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config fitted on synthetic OpenCode sessions (two providers, a model each), as `calib fit` writes it."""
    root = tmp_path_factory.mktemp("vendor")
    write_sample("opencode", root / "sessions", layout="opencode-export", sessions=4, seed=202)
    with Store(root / "calib.duckdb") as store:
        ingest([root / "sessions"], store=store)
        calibrator = fit(store, "charclass", holdout_fraction=0)
    path = root / "calibration.json"
    path.write_text(dumps(build_config(calibrator)), encoding="utf-8")
    return path


def _listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_registry_names_ts_js_and_py() -> None:
    assert list(RUNTIMES) == ["ts", "js", "py"]
    for name, spec in RUNTIMES.items():
        assert spec.written() == [*OWN_FILES[name], "calibration.json", "calib-runtime.md"]


@pytest.mark.parametrize("name", list(OWN_FILES))
def test_each_runtime_writes_exactly_its_files_as_the_package_holds_them(
    name: str, config: Path, tmp_path: Path
) -> None:
    out = tmp_path / "agent" / "vendor"  # made with its parents
    result = vendor_runtime(name, out, config)
    expected = [*OWN_FILES[name], "calibration.json", "calib-runtime.md"]
    assert result == VendorResult(
        runtime=name,
        out=out,
        files=expected,
        config=config,
        base="charclass",
        providers=["anthropic", "openai"],
        replaced=[],
    )
    written = _listing(out)
    assert sorted(written) == sorted(expected)
    for target, source in OWN_FILES[name].items():
        assert written[target] == (PACKAGE / source).read_bytes(), target
    assert written["calibration.json"] == config.read_bytes()
    assert result.to_dict() == {
        "runtime": name,
        "out": str(out),
        "files": expected,
        "replaced": [],
        "config": str(config),
        "base": "charclass",
        "providers": ["anthropic", "openai"],
        "guide": str(out / "calib-runtime.md"),
    }
    json.dumps(result.to_dict())


@pytest.mark.parametrize("name", list(OWN_FILES))
def test_the_guide_shows_the_calls_of_its_language(name: str, config: Path, tmp_path: Path) -> None:
    vendor_runtime(name, tmp_path, config)
    guide = (tmp_path / "calib-runtime.md").read_text(encoding="utf-8")
    assert "base `charclass`; providers: anthropic, openai" in guide
    if name == "py":
        assert "from calib_runtime import load" in guide
        assert "cal.predict_context(last_ctx, last_carry, new_parts, provider, model)" in guide
    else:
        assert f'from "./calib-runtime.{"js" if name == "ts" else "mjs"}"' in guide
        assert "cal.predictContext(lastCtx, lastCarry, newParts, provider, model)" in guide
    assert "cal.count(text, provider, model)" in guide
    assert "cal.params(provider, model).level" in guide
    assert "does not compute" not in guide  # charclass needs no counter


def _code_blocks(guide: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", guide, flags=re.DOTALL)


# what an agent has at hand before a request, between the guide's two blocks (load, then count)
_PY_CASE = """
last_ctx, last_carry, provider, model = 12000, 300, "openai", "gpt-5-2025-08-07"
new_parts = [("tool_result", "fn main() {}"), "thanks", {"kind": "user_text", "text": "中文"}]
text = "hello world"
prompt, summary = "fix the failing test", "what happened so far"


class _Usage:
    def model_dump(self):
        return {"input_tokens": 12, "cache_read_input_tokens": 11000, "output_tokens": 240}


class _Response:
    usage = _Usage()


response = _Response()
"""
_JS_CASE = """
const [lastCtx, lastCarry, provider, model] = [12000, 300, "openai", "gpt-5-2025-08-07"];
const newParts = [["tool_result", "fn main() {}"], "thanks", { kind: "user_text", text: "中文" }];
const text = "hello world";
const [prompt, summary] = ["fix the failing test", "what happened so far"];
const response = { usage: { input_tokens: 12, cache_read_input_tokens: 11000, output_tokens: 240 } };
"""


def _expected(config: Path) -> list[Any]:
    cal = runtime.load(str(config))
    parts: list[Any] = [("tool_result", "fn main() {}"), "thanks", {"kind": "user_text", "text": "中文"}]
    tracker = cal.tracker("openai", "gpt-5-2025-08-07", window=200_000, tool="claude-code")
    tracker.append([("user_text", "fix the failing test")])
    tracker.observe({"input_tokens": 12, "cache_read_input_tokens": 11000, "output_tokens": 240})
    return [
        cal.predict_context(12000, 300, parts, "openai", "gpt-5-2025-08-07"),
        cal.count("hello world", "openai", "gpt-5-2025-08-07"),
        "openai/gpt-5",
        tracker.usage()["total"],  # the guide's tracker: 11,012 reported + 240 of output
    ]


def test_the_python_guide_runs_beside_the_runtime(config: Path, tmp_path: Path) -> None:
    out = tmp_path / "agent"
    vendor_runtime("py", out, config)
    load, before_request, tracked = _code_blocks(
        (out / "calib-runtime.md").read_text(encoding="utf-8"), "python"
    )
    script = out / "agent.py"  # the guide's lines as written, in a file beside the runtime
    script.write_text(
        load
        + _PY_CASE
        + before_request
        + tracked
        + "import json, calib_runtime\n"
        + "print(json.dumps([context_tokens, tokens, cal.params(provider, model).level, view['total'], "
        + "calib_runtime.__file__]))\n",
        encoding="utf-8",
    )
    # no PYTHON* variables, no user site; the script's folder comes first on sys.path, as for an agent
    done = subprocess.run(
        [sys.executable, "-E", "-s", str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    *counts, module = json.loads(done.stdout)
    assert Path(module) == out / "calib_runtime.py"  # the vendored copy, not calib's
    assert counts == _expected(config)


def test_the_javascript_guide_runs_in_node_beside_the_runtime(config: Path, tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the JavaScript guide cannot be run")
    out = tmp_path / "agent"
    vendor_runtime("js", out, config)
    load, before_request, tracked = _code_blocks((out / "calib-runtime.md").read_text(encoding="utf-8"), "js")
    (out / "agent.mjs").write_text(
        load
        + _JS_CASE
        + before_request
        + tracked
        + "console.log(JSON.stringify([contextTokens, tokens, cal.params(provider, model).level, view.total]));\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [node, str(out / "agent.mjs")], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == _expected(config)


def test_the_typescript_guide_is_the_javascript_one_but_for_the_import(config: Path, tmp_path: Path) -> None:
    vendor_runtime("ts", tmp_path / "ts", config)
    vendor_runtime("js", tmp_path / "js", config)
    ts = _code_blocks((tmp_path / "ts" / "calib-runtime.md").read_text(encoding="utf-8"), "ts")
    js = _code_blocks((tmp_path / "js" / "calib-runtime.md").read_text(encoding="utf-8"), "js")
    assert len(ts) == len(js) == 3
    assert ts[1:] == js[1:]
    # the import: the .ts module under the name TypeScript resolves it by, the rest the same
    assert re.sub(r'"\./calib-runtime\.js";  // Deno.*', '"./calib-runtime.mjs";', ts[0]) == js[0]


_COUNT_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import calib_runtime
assert calib_runtime.__file__.startswith(sys.argv[1]), calib_runtime.__file__
cal = calib_runtime.load(sys.argv[1] + "/calibration.json")
cases = json.load(open(sys.argv[2], encoding="utf-8"))
counts = [cal.count(c["text"], c["provider"], c["model"], c["kind"]) for c in cases]
print(json.dumps({"counts": counts, "levels": [cal.params(c["provider"], c["model"]).level for c in cases]}))
"""


def _cases(doc: dict[str, Any]) -> list[dict[str, Any]]:
    texts = [
        "",
        "x",
        "hello world",
        "def f(x):\n    return x * 2\n",
        '{"a": [1, 2.5, null]}',
        "中文テキスト한국어",
    ]
    texts += ["😀 emoji 🇫🇷", "\ud800 lone", "é" * 300, "x" * 100_001]
    groups: list[tuple[str | None, str | None]] = [(None, None), ("nosuch", "nosuch-1")]
    for provider, entry in doc["providers"].items():
        groups.append((provider, None))
        for model in entry["models"]:
            groups += [
                (provider, model),
                (provider, f"{model}-20250514"),
                ("bedrock", f"us.anthropic.{model}-v1:0"),
            ]
    kinds = [None, "tool_result", "user_text", "assistant_text", "unknown_kind"]
    return [
        {"text": t, "provider": p, "model": m, "kind": k} for t in texts for p, m in groups for k in kinds
    ]


def test_the_vendored_python_runtime_gives_calib_runtimes_counts(config: Path, tmp_path: Path) -> None:
    out = tmp_path / "agent"
    vendor_runtime("py", out, config)
    doc = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    cases = _cases(doc)
    data = tmp_path / "cases.json"
    data.write_text(json.dumps(cases), encoding="utf-8")  # ASCII: lone surrogates escaped
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _COUNT_SCRIPT, str(out), str(data)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    cal = runtime.load(str(config))
    assert result["counts"] == [cal.count(c["text"], c["provider"], c["model"], c["kind"]) for c in cases]
    assert set(result["levels"]) == {
        "default",
        "anthropic",
        "openai",
        "anthropic/claude-sonnet-4-5",
        "openai/gpt-5",
    }
    assert len(set(result["counts"])) > 20


def test_other_files_in_the_folder_survive_and_calibs_own_are_replaced(config: Path, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("mine")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "calibration.json").write_text("not calib's")
    older = json.loads(config.read_text())
    older["fit"]["calib_version"] = "0.0.1"
    (tmp_path / "calibration.json").write_text(json.dumps(older))  # an earlier calib's config
    (tmp_path / "calib-runtime.md").write_text(
        "# calib runtime (Python)\n\nWritten by `calib export` (calib 0.0.1).\n"
    )
    (tmp_path / "runtime.py").write_text("another runtime")  # the package's name, not the one written
    result = vendor_runtime("py", tmp_path, config)
    assert result.replaced == ["calibration.json", "calib-runtime.md"]
    after = _listing(tmp_path)
    assert sorted(after) == sorted(
        [
            "agent.py",
            "lib/calibration.json",
            "runtime.py",
            "calib_runtime.py",
            "calibration.json",
            "calib-runtime.md",
        ]
    )  # and no temporary file left behind
    assert after["agent.py"] == b"mine"
    assert after["lib/calibration.json"] == b"not calib's"
    assert after["runtime.py"] == b"another runtime"
    assert after["calibration.json"] == config.read_bytes()
    again = vendor_runtime("py", tmp_path, config)
    assert again.replaced == again.files and _listing(tmp_path) == after


def test_the_config_in_the_folder_itself_can_be_vendored(config: Path, tmp_path: Path) -> None:
    shutil.copy(config, tmp_path / "calibration.json")
    result = vendor_runtime("js", tmp_path, tmp_path / "calibration.json")
    assert (tmp_path / "calibration.json").read_bytes() == config.read_bytes()
    assert "calibration.json" in result.replaced


def test_a_config_whose_base_the_runtime_does_not_compute_says_how_to_count_it(
    config: Path, tmp_path: Path
) -> None:
    doc = json.loads(config.read_text(encoding="utf-8"))
    for params in [doc["default"], *(e["params"] for e in doc["providers"].values())] + [
        m for e in doc["providers"].values() for m in e["models"].values()
    ]:
        del params["class_weights"]
    del doc["classes"]
    # one tokenizer base for every provider: a version 1 config, which still loads
    doc["schema_version"], doc["base"] = 1, "tiktoken:o200k_base"
    path = tmp_path / "tiktoken.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    vendor_runtime("py", tmp_path / "py", path)
    assert (
        "the runtime counts it with the `tiktoken` package"
        in (tmp_path / "py" / "calib-runtime.md").read_text()
    )
    vendor_runtime("js", tmp_path / "js", path)
    guide = (tmp_path / "js" / "calib-runtime.md").read_text()
    assert "This config's base is `tiktoken:o200k_base`, which the runtime does not compute" in guide
    assert 'load(config, { counters: { "tiktoken:o200k_base": (text) => count(text) } })' in guide


def test_a_guide_says_how_to_count_each_providers_preferred_base(config: Path, tmp_path: Path) -> None:
    doc = json.loads(config.read_text(encoding="utf-8"))
    provider = sorted(doc["providers"])[0]
    entry = doc["providers"][provider]
    strip = lambda p: {k: v for k, v in p.items() if k != "class_weights"}  # noqa: E731
    entry["preferred"] = {
        "base": "hf:gemma3",
        "params": strip(entry["params"]),
        "models": {m: strip(p) for m, p in entry["models"].items()},
    }
    path = tmp_path / "preferred.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    vendor_runtime("py", tmp_path / "py", path)
    py = (tmp_path / "py" / "calib-runtime.md").read_text()
    assert f'- `{provider}`: `hf:gemma3`: `counters={{"hf:gemma3": your_count}}`' in py
    assert "cal.missing_counters()" in py
    vendor_runtime("js", tmp_path / "js", path)
    js = (tmp_path / "js" / "calib-runtime.md").read_text()
    assert (
        f'- `{provider}`: `hf:gemma3` (your own count): `counters: {{ "hf:gemma3": (text) => count(text) }}`'
        in js
    )
    assert "cal.missingCounters()" in js


# -- errors: one line each, naming the file and what to do; nothing is written ----------------------


def _error(tmp_path: Path, runtime_name: str, out: Path, config: Path) -> CalibError:
    before = _listing(tmp_path)
    with pytest.raises(CalibError) as raised:
        vendor_runtime(runtime_name, out, config)
    assert _listing(tmp_path) == before
    assert "\n" not in str(raised.value)
    return raised.value


def test_an_unknown_runtime_lists_the_valid_ones(config: Path, tmp_path: Path) -> None:
    error = _error(tmp_path, "go", tmp_path / "out", config)
    assert isinstance(error, UsageError)
    assert str(error) == "unknown runtime 'go'; valid runtimes: ts, js, py"
    assert not (tmp_path / "out").exists()


def test_a_missing_config_says_to_fit_or_name_one(tmp_path: Path) -> None:
    error = _error(tmp_path, "py", tmp_path / "out", tmp_path / "calibration.json")
    assert isinstance(error, ConfigError)
    assert str(error) == (
        f"no calibration config ({tmp_path / 'calibration.json'}); run `calib fit` to write one, "
        "or pass --config PATH"
    )
    assert not (tmp_path / "out").exists()


def test_a_folder_as_config_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    error = _error(tmp_path, "py", tmp_path / "out", tmp_path / "cfg")
    assert str(error) == (
        f"cannot read the calibration config: Is a directory ({tmp_path / 'cfg'}); run `calib fit` to "
        "write one, or pass --config PATH"
    )


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_config_gives_the_systems_reason(config: Path, tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    shutil.copy(config, path)
    path.chmod(0)
    try:
        error = _error(tmp_path, "py", tmp_path / "out", path)
    finally:
        path.chmod(0o644)
    assert str(error) == (
        f"cannot read the calibration config: Permission denied ({path}); run `calib fit` to write one, "
        "or pass --config PATH"
    )


def test_a_config_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text('{\n  "schema_version": 1,\n  oops\n}\n')
    error = _error(tmp_path, "js", tmp_path / "out", path)
    assert str(error) == (
        "the calibration config is not valid JSON: Expecting property name enclosed in double quotes "
        f"({path}:3); "
        "re-export it with `calib fit`"
    )


def test_an_invalid_config_names_the_field(config: Path, tmp_path: Path) -> None:
    doc = json.loads(config.read_text(encoding="utf-8"))
    doc["default"]["message_overhead"] = "three"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    error = _error(tmp_path, "ts", tmp_path / "out", path)
    assert isinstance(error, ConfigError)
    assert str(error) == (
        f"invalid calibration config at default.message_overhead: 'three' is not of type 'number' ({path}); "
        "re-export it with `calib fit`"
    )


def test_an_output_that_is_a_file_or_holds_a_folder_of_a_written_name_is_refused(
    config: Path, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("mine")
    error = _error(tmp_path, "py", tmp_path / "file", config)
    assert isinstance(error, UsageError)
    assert (
        str(error)
        == f"cannot write the runtime to {tmp_path / 'file'}: it is not a folder; name a new or existing folder"
    )
    (tmp_path / "out" / "calib-runtime.md").mkdir(parents=True)
    error = _error(tmp_path, "py", tmp_path / "out", config)
    assert str(error) == (
        f"cannot write calib-runtime.md in {tmp_path / 'out'}: a folder has that name; move it, or name "
        "another folder; nothing was written"
    )

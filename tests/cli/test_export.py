"""`calib export --parquet DIR`, and the other commands reading DIR back with `--db DIR`."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from typer.testing import CliRunner

import calib
import calib.runtime as runtime
from calib.cli.app import app


def _run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def exported(small_store: Path) -> Path:
    out = small_store.parent / "export"
    code, stdout, stderr = _run("export", "--parquet", out, "--db", small_store, "--json")
    assert code == 0, stderr
    document = json.loads(stdout)
    assert document["out"] == str(out) and not document["replaced"]
    assert document["tables"]["sessions"] == {"rows": 2, "files": 1, "partition_by": ["tool", "month"]}
    assert document["tables"]["files"]["partition_by"] == []
    assert "call_chain" in document["views"]
    return out


def test_score_report_and_fit_read_the_export_as_they_read_the_store(
    small_store: Path, exported: Path, tmp_path: Path
) -> None:
    on_folder = _run("score", "--db", exported, "-e", "chars4", "-e", "charclass", "--json", "-q")
    on_store = _run("score", "--db", small_store, "-e", "chars4", "-e", "charclass", "--json", "-q")
    assert on_folder[0] == 0, on_folder[2]
    assert json.loads(on_folder[1]) and on_folder[1] == on_store[1]
    # no session paths and a read-only store: the agents' own folders are not ingested into it
    code, stdout, stderr = _run(
        "fit", "--db", exported, "--out", tmp_path / "c.json", "--base", "chars4", "--json"
    )
    assert code == 0, stderr
    assert json.loads(stdout)["ingest"] is None
    assert json.loads((tmp_path / "c.json").read_text())["schema_version"]
    code, _, stderr = _run(
        "report", "--db", exported, "-e", "chars4", "--no-figures", "--out", tmp_path / "r", "-q"
    )
    assert code == 0, stderr
    assert (tmp_path / "r" / "summary.json").is_file()


def test_export_says_what_it_wrote_and_replaces_an_earlier_export(small_store: Path, exported: Path) -> None:
    code, stdout, stderr = _run("export", "--parquet", exported, "--db", small_store)
    assert code == 0, stderr
    assert stdout.splitlines()[-1].startswith(f"replaced {exported}: 7 tables, ")
    assert stdout.splitlines()[-1].endswith(f"`calib score --db {exported}` reads it back")
    assert "sessions" in stdout and "tool, month" in stdout


def test_export_needs_a_format(small_store: Path) -> None:
    code, stdout, stderr = _run("export", "--db", small_store)
    assert (code, stdout) == (2, "")
    assert stderr == "Error: nothing to export; name what to write, e.g. --parquet DIR\n"


def test_a_folder_that_is_not_an_export_is_one_line_and_untouched(small_store: Path, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code, stdout, stderr = _run("export", "--parquet", tmp_path, "--db", small_store)
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"Error: cannot export to {tmp_path}: the folder is not empty and not a calib export; name a new "
        "or empty folder, or one an earlier `calib export --parquet` wrote; nothing was changed\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_a_missing_store_is_not_exported(tmp_path: Path) -> None:
    code, _, stderr = _run("export", "--parquet", tmp_path / "out", "--db", tmp_path / "none.duckdb")
    assert code == 2
    assert stderr == f"Error: no calib store at {tmp_path / 'none.duckdb'}; run `calib ingest` first\n"
    assert list(tmp_path.iterdir()) == []


def test_nothing_is_ingested_into_an_export(sessions_dir: Path, exported: Path, tmp_path: Path) -> None:
    code, _, stderr = _run("ingest", sessions_dir, "--db", exported, "-q")
    assert code == 2
    assert stderr == (
        f"Error: {exported} is a Parquet export, which calib only reads; ingest into a .duckdb store, "
        "then `calib export --parquet` it again\n"
    )
    code, _, stderr = _run("fit", sessions_dir, "--db", exported, "--out", tmp_path / "c.json")
    assert code == 2
    assert stderr.startswith("Error: a Parquet export is read-only: it cannot ingest the paths given;")
    assert not (tmp_path / "c.json").exists()


# -- `calib export --runtime NAME DIR`: a runtime and the config beside it, for an agent to vendor ------

SAMPLE = ROOT / "datasets" / "sample"
RUNTIME_FILES = {
    "ts": ["calib-runtime.ts"],
    "js": ["calib-runtime.mjs", "calib-runtime.d.mts"],
    "py": ["calib_runtime.py"],
}


@pytest.fixture(scope="module")
def sample_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The calibration `calib fit` writes for the bundled sample (fitted once for this module)."""
    if not SAMPLE.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {SAMPLE} (run `make sample`)")
    folder = tmp_path_factory.mktemp("fitted")
    out = folder / "calibration.json"
    code, _, stderr = _run("fit", SAMPLE, "--db", folder / "sample.duckdb", "--out", out, "--json", "-q")
    assert code == 0, stderr
    return out


def test_help_lists_every_runtime() -> None:
    result = CliRunner().invoke(app, ["export", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.replace("│", " ").split())  # the help as one line, out of its box
    assert "--runtime" in text and "--config" in text
    assert "Write the runtime NAME (ts, js, py) into DIR" in text
    assert "ts: calib-runtime.ts; js: calib-runtime.mjs, calib-runtime.d.mts; py: calib_runtime.py." in text


@pytest.mark.parametrize("name", list(RUNTIME_FILES))
def test_export_runtime_writes_its_files_and_says_where_the_guide_is(
    name: str, sample_config: Path, tmp_path: Path
) -> None:
    out = tmp_path / "vendor"
    out.mkdir()
    (out / "agent.ts").write_text("mine")
    code, stdout, stderr = _run("export", "--runtime", name, out, "--config", sample_config)
    assert (code, stderr) == (0, "")
    files = [*RUNTIME_FILES[name], "calibration.json", "calib-runtime.md"]
    language = {"ts": "TypeScript", "js": "JavaScript", "py": "Python"}[name]
    assert stdout.splitlines() == [
        *(f"wrote {out / f}" for f in files),
        f"{language} runtime and {sample_config} (base charclass, 5 providers) in {out}; "
        f"how to call it: {out / 'calib-runtime.md'}",
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted([*files, "agent.ts"])
    assert (out / "agent.ts").read_text() == "mine"
    assert (out / "calibration.json").read_bytes() == sample_config.read_bytes()
    package = Path(calib.__file__).parent
    sources = {"calib-runtime.ts": "runtime.ts", "calib_runtime.py": "runtime.py"}
    for written in RUNTIME_FILES[name]:
        assert (out / written).read_bytes() == (package / sources.get(written, written)).read_bytes()


def test_export_runtime_json_reads_calibration_json_in_the_current_folder(
    sample_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(sample_config, tmp_path / "calibration.json")
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = _run("export", "--runtime", "py", "agent", "--json")
    assert (code, stderr) == (0, "")
    assert json.loads(stdout) == {
        "runtime": "py",
        "out": "agent",
        "files": ["calib_runtime.py", "calibration.json", "calib-runtime.md"],
        "replaced": [],
        "config": "calibration.json",
        "base": "charclass",
        "providers": ["anthropic", "deepseek", "google", "openai", "qwen"],
        "guide": str(Path("agent") / "calib-runtime.md"),
    }
    code, stdout, _ = _run("export", "--runtime", "py", "agent", "--json")
    assert code == 0 and json.loads(stdout)["replaced"] == json.loads(stdout)["files"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--runtime", "js"],
            "--runtime js needs the folder to write into; name it, e.g. `calib export --runtime js DIR`",
        ),
        (
            ["out"],
            "a folder (out) was given without --runtime; name what to write there: --runtime NAME out "
            "(ts, js, py), or --parquet out",
        ),
        (
            ["--parquet", "p", "out"],
            "a folder (out) was given without --runtime; --parquet takes its folder as its value; drop out",
        ),
        (["--config", "c.json"], "--config is read only with --runtime; add --runtime NAME DIR (ts, js, py)"),
        (
            ["--runtime", "py", "--parquet", "p", "out"],
            "--runtime and --parquet cannot be combined; run `calib export` once for each",
        ),
        (["--runtime", "go", "out"], "unknown runtime 'go'; valid runtimes: ts, js, py"),
        (["--runtime", "go"], "unknown runtime 'go'; valid runtimes: ts, js, py"),
    ],
)
def test_export_runtime_usage_errors_are_one_line(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = _run("export", *args)
    assert (code, stdout, stderr) == (2, "", f"Error: {message}\n")
    assert list(tmp_path.iterdir()) == []


def test_export_runtime_without_a_config_says_to_fit_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = _run("export", "--runtime", "ts", "out")
    assert (code, stdout) == (1, "")
    assert stderr == (
        "Error: no calibration config (calibration.json); run `calib fit` to write one, or pass --config PATH\n"
    )
    (tmp_path / "broken.json").write_text('{"schema_version": 1}')
    code, _, stderr = _run("export", "--runtime", "ts", "out", "--config", "broken.json")
    assert code == 1
    assert stderr == (
        "Error: invalid calibration config at (top level): 'base' is a required property (broken.json); "
        "re-export it with `calib fit`\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.json"]


# -- the JavaScript runtime, as vendored, counts exactly as runtime.py ------------------------------------

_ASCII_WORDS = (
    "the", "a", "context", "window", "token", "estimate", "compaction", "provider", "model", "session",
    "tool", "result", "user", "agent", "prompt", "cache", "read", "write", "reasoning",
    "output", "input", "message", "part", "kind", "length", "four", "ratio",
)  # fmt: skip
_CODE_LINES = (
    "def count(text: str) -> int:",
    "    return (len(text) + 2) >> 2",
    "for (let i = 0; i < n; i++) { total += weights[i] * counts[i]; }",
    "const x = a?.b ?? 0x7f; // comment",
    'if err != nil {\n\treturn fmt.Errorf("%w", err)\n}',
    "SELECT count(*) FROM calls WHERE ctx > 100;",
    "#include <stdio.h>\r\nint main(void) { return 0; }",
    "λx. x + 1  # unicode in code: café, naïve, Größe",
)
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3040, 0x30FF), (0xAC00, 0xD7A3), (0x3000, 0x303F), (0xFF00, 0xFFEF))
_ASTRAL = ("😀", "👍🏽", "🇫🇷", "👩‍👩‍👧", "𝔘", "\U00010000", "\U0010ffff", "𠀀", "🚀", "\U0001d400")
_EDGES = (
    "\x00", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\x85", "\xa0", "\u00ad", "\u0301", "\u2028", "\u200b",
    "\u2fff", "\u3000", "\ud7ff", "\ue000", "\ufeff", "\uffff", "\u0100", "Ω", "ж", "ع", "→", "€",
)  # fmt: skip
_HIGH = re.compile("([\ud800-\udbff])(?=[\udc00-\udfff])")


def _no_pairs(text: str) -> str:
    """`text` with an "x" between a high and a low surrogate: in JavaScript the two would be one character."""
    return _HIGH.sub(r"\1x", text)


def _random_text(rng: random.Random) -> str:
    kind = rng.choice(["prose", "code", "json", "cjk", "astral", "surrogates", "edges", "mixed", "empty"])
    if kind == "empty":
        return ""
    if kind == "prose":
        words = [rng.choice(_ASCII_WORDS) for _ in range(rng.randint(1, 80))]
        return " ".join(words).capitalize() + rng.choice([".", "!", "?\n", ",\t", ""])
    if kind == "code":
        return "\n".join(rng.choice(_CODE_LINES) for _ in range(rng.randint(1, 12)))
    if kind == "json":
        record = {rng.choice(_ASCII_WORDS): rng.choice([rng.randint(-9999, 9999), rng.random(), None, True, "v"])
                  for _ in range(rng.randint(0, 8))}  # fmt: skip
        return json.dumps(record, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.5)
    if kind == "cjk":
        ranges = [rng.choice(_CJK_RANGES) for _ in range(3)]
        return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(1, 120)))
    if kind == "astral":
        return "".join(
            rng.choice([*_ASTRAL, " ", "a", chr(rng.randint(0x10000, 0x10FFFF))]) for _ in range(40)
        )
    if kind == "surrogates":
        return _no_pairs(
            "".join(rng.choice(["a", " ", "中", chr(rng.randint(0xD800, 0xDFFF))]) for _ in range(30))
        )
    if kind == "edges":
        return "".join(rng.choice(_EDGES) for _ in range(rng.randint(1, 30)))
    return _no_pairs("".join(_random_text(rng) for _ in range(rng.randint(2, 4))))


def _long_texts(rng: random.Random) -> list[str]:
    """A few texts past 100,000 UTF-16 units (gemini-cli's cjk rule changes there; charclass must not)."""
    prose = " ".join(rng.choice(_ASCII_WORDS) for _ in range(25_000))  # ~150k characters
    cjk = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(100_500))
    emoji = "".join(rng.choice(_ASTRAL[:5]) for _ in range(30_000))  # 2 UTF-16 units each, more with ZWJs
    mixed = _no_pairs("".join(_random_text(rng) for _ in range(3000)) + "\ud800" * 10 + "x" * 100_000)
    return [prose, cjk, emoji, mixed]


def _groups(doc: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    """Every provider and model of the config, under the names agents send, plus names it does not know."""
    groups: list[tuple[str | None, str | None]] = [
        (None, None), ("", ""), ("nosuch", None), ("nosuch", "nosuch-model"), (None, "gpt-5.5"),
    ]  # fmt: skip
    for provider, entry in doc["providers"].items():
        groups += [(provider, None), (provider, "unknown-model"), (provider.upper(), "")]
        for model in entry["models"]:
            groups += [
                (provider, model),
                (f" {provider.title()} ", f"models/{model}"),
                (provider, f"{model}-20250514"),
                (provider, f"{model}@20250514"),
                (provider, f"{model}-latest"),
                (provider, f"openrouter/{provider}/{model}"),
                ("bedrock", f"us.anthropic.{model}-v1:0"),
                ("vertex", f"{model}@latest"),
            ]
    return groups


_NODE_SCRIPT = """
import { readFileSync } from "node:fs";
import { load } from %(module)s;

const config = JSON.parse(readFileSync(%(config)s, "utf8"));
const { texts, cases, parts } = JSON.parse(readFileSync(%(cases)s, "utf8"));
const cal = load(config);
const counts = cases.map(([t, provider, model, kind]) =>
  kind === null ? cal.count(texts[t], provider, model) : cal.count(texts[t], provider, model, kind));
const partCounts = parts.map(([items, provider, model, messages]) => {
  const list = items.map(([form, t, kind]) =>
    form === "text" ? texts[t] : form === "pair" ? [kind, texts[t]] : { text: texts[t], kind });
  return messages === null ? cal.countParts(list, provider, model) : cal.countParts(list, provider, model, messages);
});
process.stdout.write(JSON.stringify({ counts, partCounts }));
"""


def test_the_exported_js_runtime_counts_exactly_as_runtime_py(
    sample_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the JavaScript runtime cannot be run")
    out = tmp_path / "vendor"
    code, _, stderr = _run("export", "--runtime", "js", out, "--config", sample_config)
    assert code == 0, stderr
    assert (out / "calib-runtime.mjs").is_file()

    rng = random.Random(20261124)
    texts = ["", *(_random_text(rng) for _ in range(3000)), *_long_texts(rng)]
    assert all(not _HIGH.search(t) for t in texts)
    assert max(len(t.encode("utf-16-le", "surrogatepass")) // 2 for t in texts) > 100_000
    doc = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    groups = _groups(doc)
    kinds: list[str | None] = [None, *sorted(doc["kind_groups"]), "no_such_kind", ""]
    cases: list[tuple[int, str | None, str | None, str | None]] = []
    for t in range(len(texts)):
        picks = [groups[t % len(groups)], *rng.sample(groups, 2)]  # every group, many times over
        cases += [(t, provider, model, rng.choice(kinds)) for provider, model in picks]
    for t in range(len(texts) - 4, len(texts)):  # the long texts under every group
        cases += [(t, provider, model, None) for provider, model in groups]
    parts = []
    for _ in range(500):
        items = [(rng.choice(["text", "pair", "object"]), rng.randrange(len(texts) - 4), rng.choice(kinds))
                 for _ in range(rng.randint(0, 6))]  # fmt: skip
        provider, model = rng.choice(groups)
        parts.append((items, provider, model, rng.choice([None, 0, 1, 3])))

    data = tmp_path / "cases.json"
    # ensure_ascii: lone surrogates travel as \uXXXX escapes, which JSON.parse reads back as they were
    data.write_text(
        json.dumps({"texts": texts, "cases": cases, "parts": parts}, ensure_ascii=True), encoding="ascii"
    )
    script = tmp_path / "check.mjs"
    script.write_text(
        _NODE_SCRIPT
        % {
            "module": json.dumps((out / "calib-runtime.mjs").as_uri()),
            "config": json.dumps(str(out / "calibration.json")),
            "cases": json.dumps(str(data)),
        },
        encoding="utf-8",
    )
    done = subprocess.run([node, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)

    # the JavaScript runtime counts no tokenizer itself: runtime.py without tiktoken falls back alike
    # (the preferred bases' counters are held to the same integers by the conformance vectors)
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    cal = runtime.load(str(sample_config))
    expected = [cal.count(texts[t], provider, model, kind) for t, provider, model, kind in cases]
    wrong = [
        (case, js, py) for case, js, py in zip(cases, result["counts"], expected, strict=True) if js != py
    ]
    assert not wrong, [(repr(texts[c[0]][:60]), c[1:], js, py) for c, js, py in wrong[:5]]

    def as_python(items: list[tuple[str, int, str | None]]) -> list[Any]:
        forms = {
            "text": lambda t, k: texts[t],
            "pair": lambda t, k: (k, texts[t]),
            "object": lambda t, k: {"text": texts[t], "kind": k},
        }
        return [forms[form](t, kind) for form, t, kind in items]

    expected_parts = [cal.count_parts(as_python(items), p, m, messages) for items, p, m, messages in parts]
    assert result["partCounts"] == expected_parts
    # the cases exercised every level of the fallback and gave many different counts
    levels = {cal.params(provider, model).level for provider, model in groups}
    assert levels == {
        "default",
        *doc["providers"],
        *(f"{p}/{m}" for p, entry in doc["providers"].items() for m in entry["models"]),
    }
    assert len({c[1:3] for c in cases}) == len(set(groups))
    # (the sample's models that take their provider's parameters count alike, hence not more)
    assert len(set(expected)) > 400

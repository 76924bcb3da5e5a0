"""Conformance vectors for the runtimes agents vendor: inputs, and the integers `calib.runtime` gives.

Every runtime of the calibration config (`calib/runtime.py`, `calib/runtime.ts` and its JavaScript
build) must give exactly these integers, not close ones; a port to another language can be held to
the same file. `python -m calib.synth.runtime_vectors OUT.json` writes it (`make vectors`); the
committed copy is `tests/conformance/runtime_vectors.json`, and a test fails when it is stale.

The file is JSON (ASCII, so lone surrogates are `\\udXXX` escapes). Texts are named once under
`texts`: a string, or `{"repeat": S, "times": N}` for S repeated N times (the long ones). Configs
are named under `configs`: one per base (schema version 1), and one per base with every parameter at
the runtimes' bound (`NAME_at_bounds`: ratios and class weights 1e100, overheads +-1e100), whose
counts of the longest texts are integers near 1e216 that both languages must still agree on. Then
the configs of providers' preferred bases: `v2_charclass` and `v2_chars4` (schema version 2), whose
anthropic prefers `hf:vectors`, google `hf:points` (tokenizers no runtime computes) and openai a base
the runtimes compute (`chars4`, or `cjk` beside an own chars4); `v3_charclass` (schema version 3), the
first of those where two models count with a base of their own (anthropic's `claude-opus-4` with
`hf:points`, google's `gemini-2.5-pro` with `hf:vectors`); and `v1_hf`, a version 1 config whose own
base is the tokenizer `hf:vectors`.

`counters` names the counter of each tokenizer the configs name, by a definition both languages
compute alike: `utf8_bytes` (the UTF-8 bytes of the text, 3 for a lone surrogate) or `code_points`.
`loads` names every calibration the vectors use: the `config` it loads and the `counters` passed in
by name (`counters=` in Python, `{ counters }` in TypeScript; none: the config alone). Each config
but `v1_hf` loads alone under its own name; `NAME+counters` passes every counter, `v2_chars4+hf:vectors`
one of the two (google falls back), `v3_charclass+hf:vectors` and `v3_charclass+hf:points` one each
(a model whose own base does not count answers with its tokenizer-free parameters). A vector's `config` names a load. A part is
`{"form", "kind", "text"}`: form `text` is the bare text, `pair` the `[kind, text]` pair (a tuple in
Python), `object` `{"text", "kind"}`. Sections:

- `bases`: per text, `chars4`, `cjk` and `class_counts` (the charclass counts by code point);
- `names`: `provider`/`model` as given and normalised;
- `lookups`: which level answers (`level`), the base its parameters apply to (`base`: a preferred
  base when it counts, else the config's own), and the strict lookup's error (`strict_error`, or null);
- `missing_counters`: per load, the preferred bases it finds no counter of (`expect`, sorted);
- `counts`, `parts`, `predictions`, `estimates`: the four calls and their `expect`ed integers (a
  configuration of preferred bases is asked the same inputs under each of its loads);
- `errors`: a config and the message `validate` raises for it (preferred blocks too);
- `documents`: a config as JSON text (`text`) and the message loading it raises (`message`; null when
  it loads): text-level failures such as nesting deeper than the runtimes read, and numbers that only
  a text can hold (1e309, 400-digit integers). Python's `loads` and TypeScript's `load` of a string.

The context accountant (`Tracker`, `rule_limit`, `read_usage`):

- `tracker_tables`: `RULES`, `STRICT_RULES` (sorted), `REASONING_POLICIES`, `DEFAULT_REASONING` and
  `USAGE_CONVENTIONS` (its tuples as lists), which both runtimes must hold alike, and the order of
  their keys (`rule_names`, `rule_order`: each rule's parameters, `usage_convention_names`);
- `rule_limits`: `rule_limit(rule, params, context, max_output, input_limit)` and its `expect`ed limit;
- `usages`: `read_usage(usage, convention)` (convention null: told by the keys) and its `expect`ed
  counts, or the `error` it raises (then `expect` is null);
- `trackers`: scripted conversations. Each has a `case`, a `config`, the `options` of
  `Calibration.tracker` (an option left out takes its default), and either the `error` that making the
  tracker raises (no steps) or its `steps`, one per line: `do` (`usage`, `set_static`, `append`,
  `remove`, `compacted`, `observe`), the call's arguments under their Python names (`parts`,
  `messages`, `placeholders`, `tokens`, `usage`, `convention`; `system` and `tools` name a text, or
  are `{"value": X}` for X passed as it is; an argument left out is left out of the call), what the
  call `returns` (append and remove an integer, observe the check, the others null) or the `error`
  it raises (then `returns` is null), and `after`: the tracker's `usage()` after the step. The first
  step of each is a bare `usage`. `calib.synth.runtime_vectors.run_step` replays one in Python.

Keys are Python's (snake_case) throughout: the options, the step arguments, `usage()` and the check
(`output_reserve`, `since_report`, `should_compact`, `last_check`, `error_pct`) and `read_usage`'s
counts (`cache_read`, `cache_write`). The TypeScript runtime spells the options and the objects it
returns in camelCase (`outputReserve`, `errorPct`, `cacheRead`, ...); its test
(`tests/node/conformance.test.mjs`) passes the options under their TypeScript names and compares
what it gets back with each key turned to snake_case. A rule's parameters (`max_context_tokens`, ...)
are the same in both, as are the error messages, which name an argument by its Python name
(`output_reserve`, `input_limit`). Every float (`percent`, `threshold`, `error_pct`, `correction`) must
be equal to the bit: both runtimes do the same IEEE operations in the same order. The counts stay far
below 2**53 / 100, where Python's exact integers and JavaScript's doubles would part.

One difference between languages is out of scope by construction: a Python string may hold a high
surrogate followed by a low one as two code points, which UTF-16 cannot tell from one astral
character. Such strings do not come out of JSON in either language, and no vector holds one.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from calib import runtime
from calib.core.config import validate_config

VECTORS_VERSION = 2
SEED = 2126

# -- texts ----------------------------------------------------------------------------------------------

_FIXED_TEXTS: dict[str, str] = {
    "empty": "",
    "space": " ",
    "one_letter": "a",
    "four_letters": "abcd",
    "prose": "The agent reads the file, finds the failing test, and proposes a two-line fix.\n",
    "code": 'def area(r: float) -> float:\n    """Circle area."""\n    return 3.14159 * r ** 2  # TODO: math.pi\n',
    "json_compact": '{"id":42,"name":"calib","tags":["a","b"],"ok":true,"ratio":0.25,"nested":{"x":null}}',
    "json_pretty": '{\n  "id": 42,\n  "items": [\n    {"path": "src/main.ts", "lines": 120}\n  ]\n}\n',
    "chinese": "上下文窗口的大小决定了何时压缩对话。",
    "japanese": "コンテキストの長さを見積もる。ひらがなとカタカナ、漢字。",
    "korean": "컨텍스트 창의 크기를 추정합니다.",
    "cjk_punctuation": "「引用」、。・〜（全角）！？",
    "mixed_cjk_ascii": "错误: 文件 src/app.py 第 12 行 (%s) 找不到 → retry 3 次",
    "emoji": "done 😀👍🏽 ship it 🚀",
    "zwj_and_flags": "👨\u200d👩\u200d👧 🇫🇷🇯🇵 ❤️",
    "math_astral": "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 and 𠀀𠀁 (CJK extension B)",
    "max_code_point": "\U0010ffff\U00010000",
    "lone_high": "a\ud800b",
    "lone_low": "\udc00x",
    "high_at_end": "text ends with half a pair \ud83d",
    "low_then_high": "\ude00\ud83d",
    "surrogate_edges": "\ud7ff\ud800 \udbff \udc00 \udfff\ue000",
    "class_edges": "\u007f\u0080\u2fff\u3000\ud7ff\ue000\uffff",
    "controls": "\x00\x01\x1b[31mred\x1b[0m\x1f\x7f",
    "whitespace": " \t\n\r\x0b\x0c\u00a0\u2028\u2029\u3000 ",
    "accents_cyrillic_arabic": "Ça coûte 5 € — Привет, мир — مرحبا بالعالم",
    "combining": "e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937",
    "bom_and_zero_width": "\ufeffstart\u200b\u200c\u200dend",
    "digits": "0123456789 3.14159 1e-9 0xFF",
    "punctuation": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
}

# Long texts, as repeats: either side of cjk's 100,000-unit switch to length/4, in several classes.
_LONG_TEXTS: dict[str, tuple[str, int]] = {
    "long_ascii": ("The quick brown fox jumps over the lazy dog. ", 4000),
    "long_cjk_under": ("中文", 50_000),  # 100,000 units: still 1.5 per unit
    "long_cjk_over": ("中文字", 33_334),  # 100,002 units: length/4
    "long_mixed_at_limit": ("ab中文", 25_000),  # 100,000 units
    "long_mixed_over": ("ab中文😀", 16_667),  # 100,002 units (an emoji is two)
    "long_emoji": ("😀", 60_000),
    "long_code": ("for (let i = 0; i < n; i++) { total += xs[i]; }\n", 3000),
}

_POOLS: tuple[str, ...] = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "0123456789",
    " \t\n\r\x0b\x0c",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\x00\x7f",
    "中文日本語한국어かなカナ「」。、ー〜全角",
    "éßøЖжπ→€\u00a0\u200b\ue000\uff01\u2fff",
    "😀👍🏽🚀𝔘𠀀\U0010ffff",
    "\ud800\udbff\udc00\udfff",
)


def _random_text(rng: random.Random) -> str:
    weights = [rng.random() for _ in _POOLS]
    chars: list[str] = []
    for _ in range(rng.randint(1, 120)):
        pool = rng.choices(_POOLS, weights)[0]
        chars.append(rng.choice(pool))
    return _no_pairs("".join(chars))


def _no_pairs(text: str) -> str:
    """Split every high surrogate that a low one follows (see the module docstring)."""
    out: list[str] = []
    for char in text:
        if out and "\udc00" <= char <= "\udfff" and "\ud800" <= out[-1] <= "\udbff":
            out.append("|")
        out.append(char)
    return "".join(out)


def texts() -> dict[str, Any]:
    """The named texts as the file holds them (long ones as repeats)."""
    rng = random.Random(SEED)
    out: dict[str, Any] = dict(_FIXED_TEXTS)
    for name, (unit, times) in _LONG_TEXTS.items():
        out[name] = {"repeat": unit, "times": times}
    for i in range(40):
        out[f"random_{i:02d}"] = _random_text(rng)
    return out


def expand(text: Any) -> str:
    """A text of the file as a string."""
    if isinstance(text, str):
        return text
    return str(text["repeat"]) * int(text["times"])


# -- configs ----------------------------------------------------------------------------------------------

_KIND_GROUPS = {
    "assistant_text": "model",
    "file": "tool",
    "reasoning": "model",
    "summary": "user",
    "system": "user",
    "tool_call": "model",
    "tool_result": "tool",
    "user_text": "user",
}
_WEIGHTS = {
    "letters": 0.267134,
    "digits": 0.669084,
    "whitespace": 0.223408,
    "punctuation": 0.444879,
    "cjk": 0.563716,
    "other": 2.65866,
}


def _params(
    seed: int, *, charclass: bool, overhead: float, static: float | None = None, **extra: Any
) -> dict:
    rng = random.Random(seed)
    params: dict[str, Any] = {
        "ratios": {g: round(rng.uniform(0.8, 1.3), 6) for g in ("model", "tool", "user")},
        "message_overhead": overhead,
        "calls": rng.randint(1, 500),
    }
    if static is not None:
        params["static_overhead"] = static
    if charclass:
        params["class_weights"] = {c: round(w * rng.uniform(0.9, 1.1), 6) for c, w in _WEIGHTS.items()}
    params.update(extra)
    return params


def _config(base: str) -> dict[str, Any]:
    cc = base == "charclass"
    doc: dict[str, Any] = {
        "schema_version": 1,
        "base": base,
        "kind_groups": dict(_KIND_GROUPS),
        "ratio_groups": ["model", "tool", "user"],
        "default_group": "user",
        "default": _params(
            1,
            charclass=cc,
            overhead=3.57138,
            static=10152.1,
            static_overhead_by_tool={
                "gemini-cli": 8123.4,
                "opencode": 11020.5,
                "codex/review": 3000.5,
                # an agent's version and its minor release (`tool_keys`)
                "opencode@1.14": 12000.5,
                "opencode@1.14.30": 12500.25,
                "codex/review@0.140": 3100.5,
            },
        ),
        "providers": {
            "anthropic": {
                "params": _params(2, charclass=cc, overhead=6.5, static=17681.4),
                "models": {
                    "claude-sonnet-4-5": _params(3, charclass=cc, overhead=4.25, static=16000.5),
                    "claude-opus-4-20250514": _params(4, charclass=cc, overhead=5.0),
                    "shared-model": _params(5, charclass=cc, overhead=2.5),
                },
            },
            "google": {
                "params": _params(
                    6,
                    charclass=cc,
                    overhead=-1.75,  # negative framing: rounding must not go below zero
                    static_overhead_by_tool={"gemini-cli": 9000.5},
                ),
                "models": {
                    "gemini-2.5-pro": _params(7, charclass=cc, overhead=0.5, static=None),
                    "models/gemini-2.5-flash": _params(8, charclass=cc, overhead=1.5, static=7000.0),
                },
            },
            "openai": {
                "params": _params(9, charclass=cc, overhead=3.0, static=5000.25),
                "models": {"gpt-5": _params(10, charclass=cc, overhead=2.0, static=None)},
            },
            "bedrock": {
                "params": _params(11, charclass=cc, overhead=4.0),
                "models": {"shared-model": _params(12, charclass=cc, overhead=3.5)},
            },
            "zeta": {"params": _params(13, charclass=cc, overhead=0.0)},
        },
    }
    if cc:
        doc["classes"] = list(_WEIGHTS)
    validate_config(doc)
    return doc


def configs() -> dict[str, dict[str, Any]]:
    """One config per base the runtimes compute by themselves."""
    return {base: _config(base) for base in runtime.RUNTIME_BASES}


def _at_bounds(doc: dict[str, Any], sign: float) -> dict[str, Any]:
    """`doc` with every ratio and class weight at the bound, and every overhead at `sign` times it."""
    out = copy.deepcopy(doc)
    levels = [out["default"]]
    for entry in out["providers"].values():
        levels += [entry["params"], *entry.get("models", {}).values()]
    bound = runtime.MAX_PARAMETER
    for params in levels:
        params["ratios"] = dict.fromkeys(params["ratios"], bound)
        if "class_weights" in params:
            params["class_weights"] = dict.fromkeys(params["class_weights"], bound)
        params["message_overhead"] = sign * bound
        if params.get("static_overhead") is not None:
            params["static_overhead"] = sign * bound
        if params.get("static_overhead_by_tool"):
            params["static_overhead_by_tool"] = dict.fromkeys(params["static_overhead_by_tool"], sign * bound)
    validate_config(out)
    return out


def bound_configs() -> dict[str, dict[str, Any]]:
    """Per base, the config with every parameter at the bound (overheads negative for chars4)."""
    return {
        f"{base}_at_bounds": _at_bounds(_config(base), -1.0 if base == "chars4" else 1.0)
        for base in runtime.RUNTIME_BASES
    }


# -- preferred bases (schema version 2), and the counters the file names ------------------------------

# The counter of each tokenizer the configs name, by a definition both languages compute alike.
COUNTERS: dict[str, str] = {"hf:points": "code_points", "hf:vectors": "utf8_bytes"}


def counter(definition: str) -> Callable[[str], int]:
    """A counter of the file's `counters`: `utf8_bytes` (a lone surrogate is 3 bytes, as U+FFFD would
    be) or `code_points`."""
    if definition == "utf8_bytes":
        return lambda text: len(text.encode("utf-8", "surrogatepass"))
    if definition == "code_points":
        return len
    raise ValueError(f"unknown counter definition {definition!r}")


def _preferred(seed: int, overhead: float, static: float | None, **extra: Any) -> dict[str, Any]:
    """A preferred base's parameters: no class weights (a preferred base is never charclass)."""
    return _params(seed, charclass=False, overhead=overhead, static=static, **extra)


def _config_v2(base: str) -> dict[str, Any]:
    """The config of `base` at schema version 2, its providers preferring other bases: anthropic
    `hf:vectors` (by provider and two models, one reached by an unknown provider), google `hf:points`
    (one model, named with a prefix), openai a base the runtimes compute (with a model the own base has
    no parameters of); bedrock and zeta none."""
    doc = _config(base)
    doc["schema_version"] = 2
    providers = doc["providers"]
    providers["anthropic"]["preferred"] = {
        "base": "hf:vectors",
        "params": _preferred(
            21, 5.5, 15000.5, static_overhead_by_tool={"claude-code": 14000.5, "opencode": 9000.25}
        ),
        "models": {
            "claude-sonnet-4-5": _preferred(22, 3.75, 15500.25),
            "shared-model": _preferred(23, 2.0, None),
        },
    }
    providers["google"]["preferred"] = {
        "base": "hf:points",
        "params": _preferred(24, -0.5, None, static_overhead_by_tool={"gemini-cli": 8500.5}),
        "models": {"models/gemini-2.5-pro": _preferred(25, 1.25, 8000.5)},
    }
    builtin = "cjk" if base == "chars4" else "chars4"
    providers["openai"]["preferred"] = {
        "base": builtin,
        "params": _preferred(26, 2.5, 4000.75),
        "models": {"gpt-5": _preferred(27, 1.0, None), "gpt-5-mini": _preferred(28, 1.5, 300.5)},
    }
    validate_config(doc)
    return doc


def _config_v3() -> dict[str, Any]:
    """`v2_charclass` at schema version 3, where anthropic's claude-opus-4 counts with `hf:points` (its
    provider prefers `hf:vectors`) and google's gemini-2.5-pro with `hf:vectors` (its provider:
    `hf:points`)."""
    doc = _config_v2("charclass")
    doc["schema_version"] = 3
    anthropic = doc["providers"]["anthropic"]["preferred"]["models"]
    anthropic["claude-opus-4-20250514"] = {**_preferred(29, 7.25, 21000.5), "base": "hf:points"}
    doc["providers"]["google"]["preferred"]["models"]["models/gemini-2.5-pro"]["base"] = "hf:vectors"
    validate_config(doc)
    return doc


def preferred_configs() -> dict[str, dict[str, Any]]:
    """The configs of preferred bases: two of version 2, one of version 3 and one of version 1 with a
    tokenizer base."""
    v1 = _config("hf:vectors")
    assert v1["schema_version"] == 1
    return {
        "v2_charclass": _config_v2("charclass"),
        "v2_chars4": _config_v2("chars4"),
        "v3_charclass": _config_v3(),
        "v1_hf": v1,
    }


# The loads of the configs of preferred bases, each list asked the same inputs (the first is the config
# alone, but for v1_hf, which cannot count its own base alone).
PREFERRED_LOADS: dict[str, dict[str, list[str]]] = {
    "v2_charclass": {"v2_charclass": [], "v2_charclass+counters": ["hf:points", "hf:vectors"]},
    "v2_chars4": {
        "v2_chars4": [],
        "v2_chars4+counters": ["hf:points", "hf:vectors"],
        "v2_chars4+hf:vectors": ["hf:vectors"],
    },
    "v3_charclass": {
        "v3_charclass": [],
        "v3_charclass+counters": ["hf:points", "hf:vectors"],
        "v3_charclass+hf:vectors": ["hf:vectors"],
        "v3_charclass+hf:points": ["hf:points"],
    },
    "v1_hf": {"v1_hf+counters": ["hf:vectors"]},
}


def loads(config_names: list[str]) -> dict[str, dict[str, Any]]:
    """Every calibration the vectors use: each config alone (but v1_hf), then the counted loads."""
    out: dict[str, dict[str, Any]] = {
        name: {"config": name, "counters": []} for name in config_names if name != "v1_hf"
    }
    for config, members in PREFERRED_LOADS.items():
        for name, counters in members.items():
            out[name] = {"config": config, "counters": counters}
    return out


def load(docs: dict[str, dict[str, Any]], spec: dict[str, Any]) -> runtime.Calibration:
    """A load of the file: its config, with the counters it names."""
    counters = {name: counter(COUNTERS[name]) for name in spec["counters"]}
    return runtime.Calibration(docs[spec["config"]], counters=counters)


# -- the calls ----------------------------------------------------------------------------------------------

NAMES: tuple[tuple[str | None, str | None], ...] = (
    ("anthropic", "claude-sonnet-4-5"),
    ("Anthropic ", "models/claude-sonnet-4-5"),
    ("amazon-bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("google-vertex", "claude-sonnet-4-5@20250929"),
    ("anthropic", "claude-opus-4-20250514"),
    ("anthropic", "CLAUDE-OPUS-4-latest"),
    ("anthropic", "claude-opus-4@latest"),
    ("anthropic", "claude-3-haiku"),
    ("google", "gemini-2.5-pro"),
    ("google", "google/gemini-2.5-flash"),
    ("GOOGLE", "gemini-2.5-pro-latest"),
    ("google", "gemini-9-ultra"),
    (" google\x1c", "\ufeffgemini-2.5-pro"),
    ("openai", "gpt-5-2025-08-07"),
    ("openrouter", "openai/gpt-5"),
    ("nobody", "shared-model"),
    ("bedrock", "shared-model"),
    ("zeta", "anything"),
    ("unknown", "unknown-model"),
    ("unknown", None),
    (None, "gemini-2.5-pro"),
    (None, None),
    ("", ""),
    ("__proto__", "constructor"),
    ("constructor", "hasOwnProperty"),
)
KINDS: tuple[str | None, ...] = (
    None,
    "user_text",
    "tool_result",
    "assistant_text",
    "reasoning",
    "summary",
    "file",
    "tool_call",
    "system",
    "",
    "unknown_kind",
    "constructor",
    "__proto__",
)
TOOLS: tuple[str | None, ...] = (
    None,
    "",
    "gemini-cli",
    "opencode",
    "opencode/subagent",
    "codex",
    "codex/review",
    "dexto",
    # versions: exact, minor, unknown patch, unknown minor, on a sub-agent, empty, no name
    "opencode@1.14.30",
    "opencode@1.14.2",
    "opencode@1.15",
    "opencode/subagent@1.14.30",
    "codex/review@0.140.7",
    "gemini-cli@",
    "@1.14",
)
FORMS = ("text", "pair", "object")


def _part(rng: random.Random, names: list[str]) -> dict[str, Any]:
    form = rng.choice(FORMS)
    kind = None if form == "text" else rng.choice(KINDS)
    return {"form": form, "kind": kind, "text": rng.choice(names)}


def as_part(part: dict[str, Any], text_of: Callable[[str], str]) -> runtime.Part:
    """A vector's part in the form it names, for `calib.runtime`."""
    text = text_of(part["text"])
    if part["form"] == "text":
        return text
    if part["form"] == "pair":
        return (part["kind"], text)
    return {"text": text, "kind": part["kind"]}


def _cycle(items: tuple[Any, ...], start: int) -> Iterator[Any]:
    i = start
    while True:
        yield items[i % len(items)]
        i += 1


def _given(parts: list[dict[str, Any]], text_of: Callable[[str], str]) -> list[runtime.Part]:
    return [as_part(x, text_of) for x in parts]


def _parts_vector(
    config: str,
    cal: runtime.Calibration,
    text_of: Callable[[str], str],
    parts: list[dict[str, Any]],
    provider: str | None,
    model: str | None,
    messages: int | None,
) -> dict[str, Any]:
    """A `parts` vector: `count_parts` of `parts` by the calibration loaded as `config`."""
    expect = cal.count_parts(_given(parts, text_of), provider, model, messages)
    return {
        "config": config,
        "parts": parts,
        "provider": provider,
        "model": model,
        "messages": messages,
        "expect": expect,
    }


def _prediction_vector(
    config: str,
    cal: runtime.Calibration,
    text_of: Callable[[str], str],
    *,
    last_ctx: int,
    last_carry: int,
    new: list[dict[str, Any]],
    provider: str | None,
    model: str | None,
    messages: int | None,
    removed: list[dict[str, Any]],
    placeholders: list[dict[str, Any]],
    removed_tokens: int,
) -> dict[str, Any]:
    """A `predictions` vector: `predict_context` by the calibration loaded as `config`."""
    expect = cal.predict_context(
        last_ctx,
        last_carry,
        _given(new, text_of),
        provider,
        model,
        messages,
        removed=_given(removed, text_of),
        placeholders=_given(placeholders, text_of),
        removed_tokens=removed_tokens,
    )
    return {
        "config": config,
        "last_ctx": last_ctx,
        "last_carry": last_carry,
        "new_parts": new,
        "provider": provider,
        "model": model,
        "messages": messages,
        "removed": removed,
        "placeholders": placeholders,
        "removed_tokens": removed_tokens,
        "expect": expect,
    }


def _estimate_vector(
    config: str,
    cal: runtime.Calibration,
    text_of: Callable[[str], str],
    parts: list[dict[str, Any]],
    provider: str | None,
    model: str | None,
    messages: int | None,
    tool: str | None,
) -> dict[str, Any]:
    """An `estimates` vector: `estimate_context` by the calibration loaded as `config`."""
    expect = cal.estimate_context(_given(parts, text_of), provider, model, messages, tool)
    return {
        "config": config,
        "parts": parts,
        "provider": provider,
        "model": model,
        "messages": messages,
        "tool": tool,
        "expect": expect,
    }


def build() -> dict[str, Any]:
    """The whole vector document."""
    named = texts()
    strings = {name: expand(t) for name, t in named.items()}
    docs = configs()
    cals = {name: runtime.Calibration(doc) for name, doc in docs.items()}
    all_docs = {**docs, **bound_configs(), **preferred_configs()}
    load_specs = loads(list(all_docs))
    loaded = {name: load(all_docs, spec) for name, spec in load_specs.items()}
    counted = [name for members in PREFERRED_LOADS.values() for name in members]
    text_names = list(named)
    short_names = [n for n in text_names if len(strings[n]) < 5000]
    rng = random.Random(SEED + 1)

    bases = [
        {
            "text": name,
            "chars4": runtime.chars4(s),
            "cjk": runtime.cjk(s),
            "class_counts": list(runtime.class_counts(s)),
        }
        for name, s in strings.items()
    ]
    names = [
        {
            "provider": p,
            "model": m,
            "provider_key": runtime.normalise_provider(p),
            "model_key": runtime.normalise_model(m),
        }
        for p, m in NAMES
    ]
    lookups = [_lookup(config, cal, p, m) for config, cal in cals.items() for p, m in NAMES]
    lookups += [_lookup(config, loaded[config], p, m) for config in counted for p, m in PREFERRED_NAMES]

    counts = []
    for c, (config, cal) in enumerate(cals.items()):
        name_cycle, kind_cycle = _cycle(NAMES, 7 * c), _cycle(KINDS, 3 * c)
        for text in text_names:
            for _ in range(3):
                p, m = next(name_cycle)
                kind = next(kind_cycle)
                expect = cal.count(strings[text], p, m, kind)
                counts.append(
                    {
                        "config": config,
                        "text": text,
                        "provider": p,
                        "model": m,
                        "kind": kind,
                        "expect": expect,
                    }
                )

    def parts_of(n: int, pool: list[str]) -> list[dict[str, Any]]:
        return [_part(rng, pool) for _ in range(n)]

    part_vectors, predictions, estimates = [], [], []
    for config, cal in cals.items():
        for i in range(30):
            p, m = rng.choice(NAMES)
            parts = parts_of(rng.randint(0, 6), text_names if i % 10 == 0 else short_names)
            messages = rng.choice([None, None, 0, 1, 3, 12])
            part_vectors.append(_parts_vector(config, cal, strings.__getitem__, parts, p, m, messages))
        for i in range(30):
            p, m = rng.choice(NAMES)
            new = parts_of(rng.randint(0, 4), short_names)
            removed = parts_of(rng.choice([0, 0, 1, 2, 3]), text_names if i % 7 == 0 else short_names)
            placeholders = parts_of(rng.choice([0, 1, 2]), short_names)
            removed_tokens = rng.choice([0, 0, 17, 250, 10**6])
            last_ctx = rng.choice([0, 1, 3000, 45_210, 987_654])
            last_carry = rng.choice([0, 12, 800])
            messages = rng.choice([None, None, 0, 2])
            predictions.append(
                _prediction_vector(
                    config,
                    cal,
                    strings.__getitem__,
                    last_ctx=last_ctx,
                    last_carry=last_carry,
                    new=new,
                    provider=p,
                    model=m,
                    messages=messages,
                    removed=removed,
                    placeholders=placeholders,
                    removed_tokens=removed_tokens,
                )
            )
        for _ in range(24):
            p, m = rng.choice(NAMES)
            parts = parts_of(rng.randint(0, 5), short_names)
            messages = rng.choice([None, None, 4])
            tool = rng.choice(TOOLS)
            estimates.append(_estimate_vector(config, cal, strings.__getitem__, parts, p, m, messages, tool))

    _extremes(bound_configs(), strings, docs, counts, part_vectors, predictions, estimates)
    _preferred_vectors(loaded, strings, counts, part_vectors, predictions, estimates)

    return {
        "vectors_version": VECTORS_VERSION,
        "schema_version": runtime.SCHEMA_VERSION,
        "schema_versions": list(runtime.SCHEMA_VERSIONS),
        "about": "Inputs and the integers calib.runtime gives for them; written by calib.synth.runtime_vectors, "
        "whose docstring describes the format.",
        "texts": named,
        "configs": all_docs,
        "counters": COUNTERS,
        "loads": load_specs,
        "bases": bases,
        "names": names,
        "lookups": lookups,
        "missing_counters": [
            {"config": name, "expect": cal.missing_counters()} for name, cal in loaded.items()
        ],
        "counts": counts,
        "parts": part_vectors,
        "predictions": predictions,
        "estimates": estimates,
        "errors": _errors(_broken(docs["charclass"])) + _errors(_broken_preferred(all_docs)),
        "documents": _documents(docs["charclass"], all_docs["v2_charclass"]),
        "tracker_tables": tracker_tables(),
        "rule_limits": _rule_limits(),
        "usages": _usages(),
        "trackers": _trackers(loaded, strings),
    }


def _lookup(config: str, cal: runtime.Calibration, provider: str | None, model: str | None) -> dict[str, Any]:
    """Which parameters answer `params(provider, model)`: their level and base, and the strict error."""
    try:
        cal.params(provider, model, strict=True)
        strict_error = None
    except runtime.UnknownGroupError as exc:
        strict_error = str(exc)
    params = cal.params(provider, model)
    return {
        "config": config,
        "provider": provider,
        "model": model,
        "level": params.level,
        "base": params.base,
        "strict_error": strict_error,
    }


# The names the configs of preferred bases are asked: NAMES, and the levels only they have (a model
# only the preferred base has, a model reached by an unknown provider, a model only the own base has).
PREFERRED_NAMES: tuple[tuple[str | None, str | None], ...] = (
    *NAMES,
    ("openai", "gpt-5-mini"),
    ("nobody", "claude-sonnet-4-5-20250929"),
    ("google", "gemini-2.5-flash"),
    ("GOOGLE", "models/gemini-2.5-pro"),
)


def _preferred_vectors(
    loaded: dict[str, runtime.Calibration],
    strings: dict[str, str],
    counts: list[dict[str, Any]],
    part_vectors: list[dict[str, Any]],
    predictions: list[dict[str, Any]],
    estimates: list[dict[str, Any]],
) -> None:
    """Vectors of the four calls on the configs of preferred bases: each input asked of every load of
    its config (with the counters passed in, and without: the fallback answers), appended to their
    sections."""
    rng = random.Random(SEED + 3)
    text_names = list(strings)
    short_names = [n for n in text_names if len(strings[n]) < 5000]
    tools = (*TOOLS, "claude-code")

    def parts_of(n: int, pool: list[str]) -> list[dict[str, Any]]:
        return [_part(rng, pool) for _ in range(n)]

    for members in PREFERRED_LOADS.values():
        cals = [(name, loaded[name]) for name in members]
        for text in text_names:
            p, m = rng.choice(PREFERRED_NAMES)
            kind = rng.choice(KINDS)
            for config, cal in cals:
                expect = cal.count(strings[text], p, m, kind)
                counts.append(
                    {
                        "config": config,
                        "text": text,
                        "provider": p,
                        "model": m,
                        "kind": kind,
                        "expect": expect,
                    }
                )
        for i in range(16):
            p, m = rng.choice(PREFERRED_NAMES)
            parts = parts_of(rng.randint(0, 6), text_names if i % 8 == 0 else short_names)
            messages = rng.choice([None, None, 0, 1, 3])
            for config, cal in cals:
                part_vectors.append(_parts_vector(config, cal, strings.__getitem__, parts, p, m, messages))
        for i in range(16):
            p, m = rng.choice(PREFERRED_NAMES)
            new = parts_of(rng.randint(0, 4), short_names)
            removed = parts_of(rng.choice([0, 1, 2]), text_names if i % 5 == 0 else short_names)
            placeholders = parts_of(rng.choice([0, 1]), short_names)
            removed_tokens = rng.choice([0, 0, 17, 10**6])
            last_ctx = rng.choice([0, 3000, 45_210])
            last_carry = rng.choice([0, 12])
            messages = rng.choice([None, None, 0, 2])
            for config, cal in cals:
                predictions.append(
                    _prediction_vector(
                        config,
                        cal,
                        strings.__getitem__,
                        last_ctx=last_ctx,
                        last_carry=last_carry,
                        new=new,
                        provider=p,
                        model=m,
                        messages=messages,
                        removed=removed,
                        placeholders=placeholders,
                        removed_tokens=removed_tokens,
                    )
                )
        for _ in range(12):
            p, m = rng.choice(PREFERRED_NAMES)
            parts = parts_of(rng.randint(0, 5), short_names)
            messages = rng.choice([None, None, 4])
            tool = rng.choice(tools)
            for config, cal in cals:
                estimates.append(
                    _estimate_vector(config, cal, strings.__getitem__, parts, p, m, messages, tool)
                )


# The longest texts, and short ones, for the configs at the bounds.
_EXTREME_TEXTS = ("long_cjk_under", "long_mixed_over", "long_emoji", "long_ascii", "empty", "chinese")


def _extremes(
    bounds: dict[str, dict[str, Any]],
    strings: dict[str, str],
    docs: dict[str, Any],
    counts: list[dict[str, Any]],
    part_vectors: list[dict[str, Any]],
    predictions: list[dict[str, Any]],
    estimates: list[dict[str, Any]],
) -> None:
    """Vectors of the four calls on the configs at the bounds, appended to their sections."""
    big = runtime.MAX_COUNT

    def part(i: int, text: str) -> dict[str, Any]:
        return {"form": FORMS[i % 3], "kind": None if i % 3 == 0 else KINDS[i % len(KINDS)], "text": text}

    everything = [part(i, t) for i, t in enumerate(_EXTREME_TEXTS)]
    for config, doc in bounds.items():
        cal = runtime.Calibration(doc)
        for i, text in enumerate(_EXTREME_TEXTS):
            p, m = NAMES[(2 * i) % len(NAMES)]
            kind = KINDS[i % len(KINDS)]
            expect = cal.count(strings[text], p, m, kind)
            counts.append(
                {"config": config, "text": text, "provider": p, "model": m, "kind": kind, "expect": expect}
            )
        for messages in (None, 0, big):
            p, m = "google", "gemini-2.5-pro"
            part_vectors.append(_parts_vector(config, cal, strings.__getitem__, everything, p, m, messages))
        for last_ctx, last_carry, removed_tokens, messages in (
            (big, big, 0, None),
            (big, -big, -big, big),
            (0, 0, big, 0),
        ):
            new, removed, placeholders = everything[:3], everything[3:], [part(1, "space")]
            p, m = "anthropic", "claude-sonnet-4-5"
            predictions.append(
                _prediction_vector(
                    config,
                    cal,
                    strings.__getitem__,
                    last_ctx=last_ctx,
                    last_carry=last_carry,
                    new=new,
                    provider=p,
                    model=m,
                    messages=messages,
                    removed=removed,
                    placeholders=placeholders,
                    removed_tokens=removed_tokens,
                )
            )
        for tool in ("gemini-cli", None):
            p, m = "nobody", None
            estimates.append(_estimate_vector(config, cal, strings.__getitem__, everything, p, m, big, tool))


# -- configs that must be refused ------------------------------------------------------------------------------


def _broken(good: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    def edit(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        doc = copy.deepcopy(good)
        change(doc)
        return doc

    yield "not an object", ["schema_version", 1]
    yield "newer schema", edit(lambda d: d.update(schema_version=runtime.SCHEMA_VERSION + 1))
    yield "no schema version", edit(lambda d: d.pop("schema_version"))
    yield "schema version as text", edit(lambda d: d.update(schema_version="1"))
    yield "no base", edit(lambda d: d.pop("base"))
    yield "empty base", edit(lambda d: d.update(base=""))
    yield "kind groups as a list", edit(lambda d: d.update(kind_groups=["user"]))
    yield "no ratio groups", edit(lambda d: d.update(ratio_groups=[]))
    yield "ratio group not a name", edit(lambda d: d.update(ratio_groups=["model", 3]))
    yield "kind in an unknown group", edit(lambda d: d["kind_groups"].update(tool_result="tools"))
    yield "unknown default group", edit(lambda d: d.update(default_group="other"))
    yield "no classes", edit(lambda d: d.pop("classes"))
    yield "unknown class", edit(lambda d: d["classes"].append("emoji"))
    yield "no default", edit(lambda d: d.pop("default"))
    yield "default without ratios", edit(lambda d: d["default"].pop("ratios"))
    yield "default without framing", edit(lambda d: d["default"].pop("message_overhead"))
    yield "missing ratio", edit(lambda d: d["default"]["ratios"].pop("tool"))
    yield "negative ratio", edit(lambda d: d["default"]["ratios"].update(tool=-0.5))
    yield "ratio as text", edit(lambda d: d["default"]["ratios"].update(tool="1.0"))
    yield "ratio as a boolean", edit(lambda d: d["default"]["ratios"].update(tool=True))
    yield "framing as null", edit(lambda d: d["default"].update(message_overhead=None))
    yield "static overhead as text", edit(lambda d: d["default"].update(static_overhead="big"))
    yield "static by tool as a list", edit(lambda d: d["default"].update(static_overhead_by_tool=[1]))
    yield (
        "static of a tool as text",
        edit(lambda d: d["default"]["static_overhead_by_tool"].update(opencode="x")),
    )
    yield "missing class weight", edit(lambda d: d["default"]["class_weights"].pop("cjk"))
    yield "negative class weight", edit(lambda d: d["default"]["class_weights"].update(cjk=-1.5))
    yield "providers as a list", edit(lambda d: d.update(providers=[]))
    yield "providers as null", edit(lambda d: d.update(providers=None))
    yield "provider without params", edit(lambda d: d["providers"]["google"].pop("params"))
    yield "models as a list", edit(lambda d: d["providers"]["google"].update(models=["gemini"]))
    yield "model as a number", edit(lambda d: d["providers"]["google"]["models"].update(x=1.5))
    yield (
        "model ratio as an object",
        edit(lambda d: d["providers"]["openai"]["models"]["gpt-5"]["ratios"].update(user={"a": [1, None]})),
    )
    # beyond the bounds that keep every estimate finite
    yield "ratio of 1e308", edit(lambda d: d["default"]["ratios"].update(tool=1e308))
    yield (
        "model ratio just over the bound",
        edit(lambda d: d["providers"]["openai"]["models"]["gpt-5"]["ratios"].update(user=2e100)),
    )
    yield (
        "class weight of 1e200",
        edit(lambda d: d["providers"]["google"]["params"]["class_weights"].update(cjk=1e200)),
    )
    yield "framing below the bound", edit(lambda d: d["default"].update(message_overhead=-1.5e100))
    yield "static overhead over the bound", edit(lambda d: d["default"].update(static_overhead=1e101))
    yield (
        "static of a tool below the bound",
        edit(lambda d: d["default"]["static_overhead_by_tool"].update(opencode=-1e300)),
    )
    yield "tiny negative class weight", edit(lambda d: d["default"]["class_weights"].update(digits=-1.5e-7))
    yield "small negative ratio", edit(lambda d: d["default"]["ratios"].update(model=-0.000015))
    yield (
        "ratio of a group not listed",
        edit(lambda d: d["providers"]["zeta"]["params"]["ratios"].update(legacy="1.2")),
    )
    # values of any size or depth where a number belongs: the message shows them cut short
    yield "ratio nested 50 deep", edit(lambda d: d["default"]["ratios"].update(tool=_nested(50)))
    yield (
        "ratio as a nested object",
        edit(
            lambda d: d["default"]["ratios"].update(
                tool={"a": {"b": {"c": 1}}, "d": [1, [2, [3]]], "e": True}
            )
        ),
    )
    yield "ratio as a long text", edit(lambda d: d["default"]["ratios"].update(tool="x" * 1000))
    yield "ratio as astral text", edit(lambda d: d["default"]["ratios"].update(tool="\U0001f600" * 30))
    yield "ratio as mixed text", edit(lambda d: d["default"]["ratios"].update(tool="ab\U0001f600" * 20))
    yield "ratio as a long list", edit(lambda d: d["default"]["ratios"].update(tool=list(range(200))))
    yield "base as a long text", edit(lambda d: d.update(base=["chars4"] * 100))


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _broken_preferred(docs: dict[str, dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    """Configs of schema version 2 refused: versions, an own base that is a tokenizer, bad preferred
    blocks, and a preferred block in a version 1 config."""

    def edit(name: str, change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
        doc = copy.deepcopy(docs[name])
        change(doc)
        return doc

    def google(doc: dict[str, Any]) -> dict[str, Any]:
        preferred: dict[str, Any] = doc["providers"]["google"]["preferred"]
        return preferred

    yield "version 0", edit("v2_charclass", lambda d: d.update(schema_version=0))
    yield "version 1.5", edit("v2_charclass", lambda d: d.update(schema_version=1.5))
    yield "version true", edit("v2_charclass", lambda d: d.update(schema_version=True))
    yield "version as a list", edit("v2_charclass", lambda d: d.update(schema_version=[2]))
    yield "version 2: own base tiktoken", edit("v2_chars4", lambda d: d.update(base="tiktoken:o200k_base"))
    yield "version 2: own base hf", edit("v2_chars4", lambda d: d.update(base="hf:vectors"))
    yield "version 2.0: own base hf", edit("v2_chars4", lambda d: d.update(schema_version=2.0, base="hf:x"))
    yield (
        "version 2: own base a long name",
        edit("v2_chars4", lambda d: d.update(base="tokenizer:" + "x" * 100)),
    )
    yield "preferred in a version 1 config", edit("v2_charclass", lambda d: d.update(schema_version=1))
    yield (
        "preferred in a version 1 config, as null",
        edit("v1_hf", lambda d: d["providers"]["zeta"].update(preferred=None)),
    )
    yield "preferred as a list", edit("v2_charclass", lambda d: d["providers"]["google"].update(preferred=[]))
    yield "preferred as null", edit("v2_charclass", lambda d: d["providers"]["google"].update(preferred=None))
    yield "preferred without a base", edit("v2_charclass", lambda d: google(d).pop("base"))
    yield "preferred base empty", edit("v2_charclass", lambda d: google(d).update(base=""))
    yield "preferred base a number", edit("v2_charclass", lambda d: google(d).update(base=5))
    yield "preferred base charclass", edit("v2_chars4", lambda d: google(d).update(base="charclass"))
    yield (
        "preferred base charclass, the own base",
        edit("v2_charclass", lambda d: google(d).update(base="charclass")),
    )
    yield "preferred base the own base", edit("v2_chars4", lambda d: google(d).update(base="chars4"))
    yield "preferred without params", edit("v2_charclass", lambda d: google(d).pop("params"))
    yield "preferred params as a list", edit("v2_charclass", lambda d: google(d).update(params=[1]))
    yield (
        "preferred params without framing",
        edit("v2_charclass", lambda d: google(d)["params"].pop("message_overhead")),
    )
    yield "preferred missing ratio", edit("v2_charclass", lambda d: google(d)["params"]["ratios"].pop("tool"))
    yield (
        "preferred negative ratio",
        edit("v2_charclass", lambda d: google(d)["params"]["ratios"].update(user=-1)),
    )
    yield (
        "preferred static over the bound",
        edit("v2_charclass", lambda d: google(d)["params"].update(static_overhead=1e101)),
    )
    yield (
        "preferred static of a tool as text",
        edit("v2_charclass", lambda d: google(d)["params"]["static_overhead_by_tool"].update(codex="x")),
    )
    yield "preferred models as a list", edit("v2_charclass", lambda d: google(d).update(models=["gemini"]))
    yield "preferred models as null", edit("v2_charclass", lambda d: google(d).update(models=None))
    yield (
        "preferred model ratio as text",
        edit("v2_chars4", lambda d: google(d)["models"]["models/gemini-2.5-pro"]["ratios"].update(model="1")),
    )
    yield (
        "preferred model as a number",
        edit("v2_chars4", lambda d: d["providers"]["openai"]["preferred"]["models"].update(x=2)),
    )
    yield (
        "a model's own base in a version 2 config",
        edit("v2_chars4", lambda d: google(d)["models"]["models/gemini-2.5-pro"].update(base="hf:vectors")),
    )

    def opus(doc: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = doc["providers"]["anthropic"]["preferred"]["models"][
            "claude-opus-4-20250514"
        ]
        return params

    yield "a model's own base empty", edit("v3_charclass", lambda d: opus(d).update(base=""))
    yield "a model's own base a number", edit("v3_charclass", lambda d: opus(d).update(base=4.7))
    yield "a model's own base null", edit("v3_charclass", lambda d: opus(d).update(base=None))
    yield "a model's own base charclass", edit("v3_charclass", lambda d: opus(d).update(base="charclass"))
    yield "version 4", edit("v3_charclass", lambda d: d.update(schema_version=4))
    yield (
        "own params refused before the preferred block",
        edit(
            "v2_charclass",
            lambda d: (google(d).pop("base"), d["providers"]["google"]["params"].pop("ratios")),
        ),
    )


def _errors(cases: Iterable[tuple[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for case, doc in cases:
        try:
            runtime.validate(doc)
        except runtime.CalibrationError as exc:
            out.append({"case": case, "config": doc, "message": str(exc)})
        else:
            raise AssertionError(f"the runtime accepts the broken config {case!r}")
    return out


def _documents(good: dict[str, Any], v2: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON texts of configs and what loading each gives (see the module docstring): `good` a version
    1 config, `v2` a version 2 one with preferred bases."""
    depth = runtime.MAX_DEPTH

    def with_fit(literal: str) -> str:
        doc = copy.deepcopy(good)
        doc["fit"] = 7777.5
        return json.dumps(doc, indent=2, sort_keys=True).replace("7777.5", literal)

    def with_number(place: Callable[[dict[str, Any]], dict[str, Any]], key: str, literal: str) -> str:
        doc = copy.deepcopy(good)
        place(doc)[key] = 7777.5
        return json.dumps(doc, sort_keys=True).replace("7777.5", literal)

    def with_text(doc: dict[str, Any], literal: str, replacement: str) -> str:
        text = json.dumps(doc, sort_keys=True)
        assert text.count(literal) == 1, literal
        return text.replace(literal, replacement)

    strings = {"note": 'quoted \\" [[[{{{ \\\\' * 30, "other": "[" * 200, "emoji": "\U0001f600[" * 100}
    cases = [
        ("an array nested 1,000 deep", "[" * 1000 + "]" * 1000),
        ("one level too deep, on line 1", "[" * (depth + 1) + "]" * (depth + 1)),
        ("as deep as may be", "[" * depth + "]" * depth),
        ("nested too deep inside fit", with_fit("\n" + "[" * depth + "]" * depth)),
        ("nested to the limit inside fit", with_fit("[" * (depth - 1) + "]" * (depth - 1))),
        ("objects nested too deep", with_fit("\n\n" + '{"a": ' * depth + "1" + "}" * depth)),
        ("brackets inside strings", with_fit(json.dumps(strings))),
        ("1e309 reads as infinity", with_number(lambda d: d["default"], "message_overhead", "1e309")),
        ("-1e309 reads as -infinity", with_number(lambda d: d["default"], "static_overhead", "-1e309")),
        ("a 400-digit integer", with_number(lambda d: d["default"]["ratios"], "tool", "1" + "0" * 400)),
        ("a 5000-digit integer", with_number(lambda d: d["default"]["ratios"], "tool", "-" + "9" * 5000)),
        ("an integer of 1e101", with_number(lambda d: d["default"]["ratios"], "user", "1" + "0" * 101)),
        ("an integer at the bound", with_number(lambda d: d["default"]["ratios"], "user", "1" + "0" * 100)),
        (
            "1e308 as text",
            with_number(lambda d: d["providers"]["google"]["params"]["ratios"], "tool", "1e308"),
        ),
        ("a version 2 config with preferred bases", json.dumps(v2, indent=2, sort_keys=True)),
        ("version 2.0 reads as 2", with_text(v2, '"schema_version": 2', '"schema_version": 2.0')),
        ("version 1.0 reads as 1", with_text(good, '"schema_version": 1', '"schema_version": 1.0')),
        (
            "version 2e0 with a tokenizer as its own base",
            with_text({**v2, "base": "hf:vectors"}, '"schema_version": 2', '"schema_version": 2e0'),
        ),
        (
            "a preferred framing of -1e309",
            with_text(v2, '"message_overhead": -0.5', '"message_overhead": -1e309'),
        ),
    ]
    out = []
    for case, text in cases:
        try:
            runtime.loads(text)
            message = None
        except runtime.CalibrationError as exc:
            message = str(exc)
        out.append({"case": case, "text": text, "message": message})
    return out


# -- the context accountant: tables, rule limits, usages and scripted trackers ----------------------------


def tracker_tables() -> dict[str, Any]:
    """The tables both runtimes must hold alike (USAGE_CONVENTIONS with its tuples as lists), and the
    order of their keys, which the file's sorted objects do not keep (error messages list them)."""
    return {
        "rules": runtime.RULES,
        "rule_order": {name: list(params) for name, params in runtime.RULES.items()},
        "rule_names": list(runtime.RULES),
        "usage_convention_names": list(runtime.USAGE_CONVENTIONS),
        "strict_rules": sorted(runtime.STRICT_RULES),
        "reasoning_policies": list(runtime.REASONING_POLICIES),
        "default_reasoning": runtime.DEFAULT_REASONING,
        "usage_conventions": {
            name: {key: value if isinstance(value, str) else list(value) for key, value in table.items()}
            for name, table in runtime.USAGE_CONVENTIONS.items()
        },
    }


# (context, max_output, input_limit): windows of the agents' models, one with a prompt cap below it,
# and small ones where a preset's reserve or buffer is larger than the window's share.
_RULE_WINDOWS: tuple[tuple[int, int, int | None], ...] = (
    (200_000, 32_000, None),
    (400_000, 128_000, 272_000),
    (1_048_576, 65_536, None),
    (128_000, 16_384, 100_000),
    (32_768, 8_192, None),
    (16_000, 30_000, 12_000),
    (64_000, 8_000, None),
)
_RULE_OVERRIDES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("gemini-cli", {"threshold": 0.7}),
    ("dexto", {"max_context_tokens": 64_000}),
    ("dexto", {"threshold": 0.8, "max_context_tokens": 1_000_000}),
    ("opencode", {"reserved": 10_000}),
    ("opencode", {"buffer": 50_000}),
    ("opencode-2025", {"output_token_max": 8_000}),
    ("opencode-2", {"buffer": 40_000, "output_token_max": 16_000}),
    ("claude-code", {"output_reserve": 64_000, "buffer": 3_000.5}),
    ("claude-code-early", {"buffer": 0}),
    ("codex", {"fraction": 0.95}),
    ("codex", {"auto_compact_token_limit": 180_000}),
    ("qwen-code", {"threshold": 0.7}),
    ("qwen-code", {"summary_reserve": 0, "buffer": 0}),
    ("llxprt", {"threshold": 0.5}),
    ("cline", {"fraction": 0.8}),
    ("cline", {"input_share": 1.0}),
    ("roo-code", {"percent": 75}),
    ("roo-code", {"percent": 50, "buffer_fraction": 0.2}),
    ("custom", {"share": 0.85}),
    ("custom", {"reserve": 16_384}),
    ("custom", {"share": 0.333, "reserve": 1_000.25}),
)


def _rule_limits() -> list[dict[str, Any]]:
    """`rule_limit` of every preset on each window, with its defaults and with parameters given."""
    cases: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in runtime.RULES]
    cases += _RULE_OVERRIDES
    out = []
    for name, params in cases:
        for context, max_output, input_limit in _RULE_WINDOWS:
            expect = runtime.rule_limit(name, params, context, max_output, input_limit)
            out.append(
                {
                    "rule": name,
                    "params": params,
                    "context": context,
                    "max_output": max_output,
                    "input_limit": input_limit,
                    "expect": expect,
                }
            )
    return out


def _anthropic(prompt: int, output: int, *, read: int = 0, write: int = 0) -> dict[str, Any]:
    """Anthropic's usage of a call whose whole prompt is `prompt`: input_tokens is what the cache
    neither read nor wrote."""
    usage: dict[str, Any] = {"input_tokens": prompt - read - write, "output_tokens": output}
    if read:
        usage["cache_read_input_tokens"] = read
    if write:
        usage["cache_creation_input_tokens"] = write
    return usage


def _chat(prompt: int, visible: int, *, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """OpenAI Chat Completions: completion_tokens holds the reasoning, told apart in the details."""
    completion = visible + reasoning
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning, "accepted_prediction_tokens": 0},
    }


def _responses(prompt: int, visible: int, *, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """The OpenAI Responses API: input_tokens and output_tokens, with their details."""
    output = visible + reasoning
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt + output,
    }


def _gemini(
    prompt: int, visible: int, *, thoughts: int | None = None, cached: int | None = None
) -> dict[str, Any]:
    """Gemini's usageMetadata: candidates exclude the thoughts."""
    usage: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": visible}
    if thoughts is not None:
        usage["thoughtsTokenCount"] = thoughts
    if cached is not None:
        usage["cachedContentTokenCount"] = cached
    usage["totalTokenCount"] = prompt + visible + (thoughts or 0)
    return usage


def _ai_sdk(
    prompt: int, visible: int, *, reasoning: int | None = None, cached: int | None = None
) -> dict[str, Any]:
    """The AI SDK's usage: outputTokens holds the reasoning, as OpenAI's do."""
    usage: dict[str, Any] = {"inputTokens": prompt, "outputTokens": visible + (reasoning or 0)}
    if reasoning is not None:
        usage["reasoningTokens"] = reasoning
    if cached is not None:
        usage["cachedInputTokens"] = cached
    usage["totalTokens"] = prompt + usage["outputTokens"]
    return usage


# Usages to read: every convention with every count, with counts left out or null, told apart only by
# their keys, named explicitly, and refused.
_USAGES: tuple[tuple[dict[str, Any], Any], ...] = (
    (_anthropic(9712, 250, read=9000, write=700), None),
    ({"input_tokens": 7}, None),
    ({"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": None}, None),
    ({"input_tokens": 5.0, "output_tokens": 2.0, "cache_creation_input_tokens": 1e3}, None),
    (_chat(9712, 160, cached=9000, reasoning=90), None),
    ({"prompt_tokens": 100, "completion_tokens": 40}, None),
    ({"prompt_tokens": 100, "completion_tokens": 40, "completion_tokens_details": None}, None),
    (
        {
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "completion_tokens_details": {"reasoning_tokens": 25},
        },
        None,
    ),
    ({"prompt_tokens": 100, "prompt_tokens_details": [3], "completion_tokens_details": 5}, None),
    (_responses(9712, 160, cached=9000, reasoning=90), None),
    ({"input_tokens": 50, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 4}}, None),
    ({"input_tokens": 50, "input_tokens_details": {}}, None),
    ({"prompt_tokens": None, "input_tokens": 60, "input_tokens_details": {"cached_tokens": 60}}, None),
    (_gemini(9712, 160, thoughts=90, cached=9000), None),
    ({"promptTokenCount": 10}, None),
    ({"promptTokenCount": 10, "candidatesTokenCount": None, "thoughtsTokenCount": 4}, None),
    (_ai_sdk(9712, 160, reasoning=90, cached=9000), None),
    ({"inputTokens": 0, "outputTokens": 0}, None),
    ({"inputTokens": 3, "outputTokens": 2, "reasoningTokens": 9}, None),
    ({"input_tokens": 7, "output_tokens": 3}, "openai"),
    ({"input_tokens": 7, "output_tokens": 3}, "anthropic"),
    (
        {"input_tokens": 7, "cache_read_input_tokens": 5, "input_tokens_details": {"cached_tokens": 5}},
        "anthropic",
    ),
    (
        {"input_tokens": 7, "cache_read_input_tokens": 5, "input_tokens_details": {"cached_tokens": 5}},
        "openai",
    ),
    (_gemini(500, 20, thoughts=30), "gemini"),
    (_ai_sdk(500, 20, reasoning=30), "ai-sdk"),
    (_ai_sdk(500, 20, reasoning=30), None),
    ({"prompt_tokens": 100}, "anthropic"),
    ({"input_tokens": 100}, "gemini"),
    ({"input_tokens": 100}, "bedrock"),
    ({"input_tokens": 100}, ["openai"]),
    ({"input_tokens": 100}, ""),
    ({"output_tokens": 5}, None),
    ({}, None),
    ({"input_tokens": -3}, None),
    ({"input_tokens": -0.0}, None),
    ({"prompt_tokens": "12"}, None),
    ({"prompt_tokens": 12, "completion_tokens": "7"}, None),
    ({"promptTokenCount": 10, "thoughtsTokenCount": True}, None),
    ({"inputTokens": 1.5}, None),
    ({"inputTokens": None}, None),
    ({"input_tokens": 10, "cache_read_input_tokens": 2.5}, None),
    ({"input_tokens": 10, "cache_creation_input_tokens": -1}, None),
    ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": False}}, None),
    ({"input_tokens": 9007199254740991, "output_tokens": 9007199254740991}, None),
    ({"input_tokens": 9007199254740992}, None),
    ({"input_tokens": 1e300}, None),
    ({"promptTokenCount": {"total": 5}}, None),
    ({"promptTokenCount": [5]}, None),
)
_NOT_USAGES: tuple[Any, ...] = ([], [{"input_tokens": 5}], None, "input_tokens", 42, True)


def _usages() -> list[dict[str, Any]]:
    """`read_usage` of each usage (a named convention where given): its counts, or its error."""
    cases: list[tuple[Any, Any]] = [*_USAGES, *((u, None) for u in _NOT_USAGES)]
    out = []
    for usage, convention in cases:
        usage = _json(usage)
        try:
            expect, error = runtime.read_usage(usage, convention), None
        except runtime.CalibrationError as exc:
            expect, error = None, str(exc)
        out.append({"usage": usage, "convention": convention, "expect": expect, "error": error})
    return out


def _json(value: Any) -> Any:
    """`value` as the file holds it, and as both runtimes read it back (tuples are lists)."""
    return json.loads(json.dumps(value))


def make_tracker(cal: runtime.Calibration, options: dict[str, Any]) -> runtime.Tracker:
    """A vector's tracker: `options` are `Calibration.tracker`'s (snake_case; absent: the default)."""
    rest = {key: value for key, value in options.items() if key not in ("provider", "model")}
    return cal.tracker(options.get("provider"), options.get("model"), **rest)


def _text_arg(value: Any, text_of: Callable[[str], str]) -> Any:
    """A set_static argument: a text's name, or {"value": X} for X as it is (not a text: refused)."""
    if isinstance(value, str):
        return text_of(value)
    return value["value"] if isinstance(value, dict) else value


def run_step(tracker: runtime.Tracker, step: dict[str, Any], text_of: Callable[[str], str]) -> Any:
    """One step of a tracker vector, as calib.runtime takes it: what the call returns. An argument the
    step leaves out is left out of the call (its default)."""
    do = step["do"]

    def parts(key: str) -> list[runtime.Part]:
        return [as_part(p, text_of) for p in step[key]]

    if do == "usage":
        return None
    if do == "set_static":
        tracker.set_static(**{k: _text_arg(step[k], text_of) for k in ("system", "tools") if k in step})
        return None
    if do == "append":
        return tracker.append(parts("parts"), *([step["messages"]] if "messages" in step else []))
    if do == "remove":
        kwargs: dict[str, Any] = {key: parts(key) for key in ("parts", "placeholders") if key in step}
        if "tokens" in step:
            kwargs["tokens"] = step["tokens"]
        return tracker.remove(**kwargs)
    if do == "compacted":
        tracker.compacted(*([parts("parts")] if "parts" in step else []))
        return None
    if do == "observe":
        return tracker.observe(step["usage"], *([step["convention"]] if "convention" in step else []))
    raise ValueError(f"unknown tracker step {do!r}")


class _Script:
    """One tracker vector in the making: its options, then each step with what it returned (or the
    error it raised) and the tracker's usage() after it."""

    def __init__(
        self,
        out: list[dict[str, Any]],
        case: str,
        config: str,
        options: dict[str, Any],
        cals: dict[str, runtime.Calibration],
        strings: dict[str, str],
    ) -> None:
        self.text_of = strings.__getitem__
        self.entry: dict[str, Any] = {
            "case": case,
            "config": config,
            "options": _json(options),
            "error": None,
            "steps": [],
        }
        out.append(self.entry)
        self.tracker: runtime.Tracker | None = None
        try:
            self.tracker = make_tracker(cals[config], self.entry["options"])
        except runtime.CalibrationError as exc:
            self.entry["error"] = str(exc)
        else:
            self.step("usage")

    def step(self, do: str, **args: Any) -> Any:
        assert self.tracker is not None, self.entry["case"]
        step = _json({"do": do, **args})
        try:
            returns, error = run_step(self.tracker, step, self.text_of), None
        except runtime.CalibrationError as exc:
            returns, error = None, str(exc)
        after = self.tracker.usage()
        self.entry["steps"].append({**step, "returns": returns, "error": error, "after": after})
        return returns

    def view(self) -> dict[str, Any]:
        assert self.tracker is not None
        return self.tracker.usage()

    def total(self) -> int:
        return int(self.view()["total"])

    def report(self, factor: float) -> int:
        """The whole prompt of a call that finds `factor` times the change estimated since the last
        report (the prompt held what was known, and the change; before any report, the total)."""
        view = self.view()
        if view["basis"] == "estimated":
            return round(view["total"] * factor)
        known = view["total"] - round(view["since_report"] * (view["correction"] or 1.0))
        return max(0, known + round(view["since_report"] * factor))


def _p(text: str, kind: str | None = None) -> dict[str, Any]:
    """A part: the bare text without a kind, else the (kind, text) pair."""
    return {"form": "text" if kind is None else "pair", "kind": kind, "text": text}


def _o(text: str, kind: str | None) -> dict[str, Any]:
    """A part as an object {"text", "kind"}."""
    return {"form": "object", "kind": kind, "text": text}


# Names and tools of the random walks: each reaches a different level of the configs.
_WALK_NAMES: tuple[tuple[str, str | None], ...] = (
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-3-haiku"),
    ("google", "gemini-2.5-pro"),
    ("google", "gemini-9-ultra"),
    ("openai", "gpt-5"),
    ("nobody", "shared-model"),
    ("unknown", None),
)
_WALK_RULES: tuple[Any, ...] = (
    None,
    *runtime.RULES,
    {"share": 0.8},
    {"reserve": 12_000, "share": 0.95},
    {"name": "dexto", "threshold": 0.75},
)


def _trackers(cals: dict[str, runtime.Calibration], strings: dict[str, str]) -> list[dict[str, Any]]:
    """Scripted conversations: every preset and policy, the four conventions, corrections, removals,
    compactions, clamped breakdowns and refused input; then seeded random walks."""
    out: list[dict[str, Any]] = []

    def script(case: str, config: str, **options: Any) -> _Script:
        return _Script(out, case, config, options, cals, strings)

    # Claude Code: the fitted static overhead, then the agent's own texts; Anthropic's cache fields.
    s = script(
        "claude-code: fitted static, then the agent's texts; Anthropic usage with cache reads and writes",
        "chars4",
        provider="anthropic",
        model="claude-sonnet-4-5",
        window=200_000,
        tool="claude-code",
    )
    s.step("append", parts=[_p("prose", "user_text")])
    s.step("set_static", system="code", tools="json_pretty")
    prompt = s.report(1.0) + 37
    s.step("observe", usage=_anthropic(prompt, 150, write=prompt - 12))
    s.step("append", parts=[_p("prose", "assistant_text"), _p("json_compact", "tool_result")])
    s.step("append", parts=[_o("long_code", "tool_result")])
    prompt = s.report(1.0) - 25
    s.step("observe", usage=_anthropic(prompt, 420, read=prompt - 1200, write=900))
    s.step("remove", parts=[_p("long_code", "tool_result")], placeholders=[_p("four_letters", "tool_result")])
    s.step("set_static", system="prose")
    s.step("append", parts=[])
    s.step("append", parts=[], messages=2)
    s.step("append", parts=[_p("empty", "user_text"), _p("chinese")])
    # a report that puts the total at the threshold (167,000): claude-code compacts at it
    s.step("observe", usage=_anthropic(166_500, 500, read=150_000))
    s.step("append", parts=[_p("one_letter", "user_text")])
    s.step("compacted", parts=[_p("prose", "summary")])
    s.step("append", parts=[_p("japanese", "user_text")])
    prompt = s.report(1.1)
    s.step("observe", usage=_anthropic(prompt, 64, read=prompt // 2))
    s.step("set_static", tools="json_compact")

    # Codex on GPT-5 behind a prompt cap: chat usage, a report before any append, the correction
    # moving with each report (to its bound and back), the last call's reasoning kept.
    s = script(
        "codex on gpt-5 with an input limit: OpenAI chat usage, correction on, the last reasoning kept",
        "cjk",
        provider="openai",
        model="gpt-5-2025-08-07",
        window=400_000,
        output_reserve=128_000,
        input_limit=272_000,
        tool="codex",
        reasoning="strip-all-but-last",
        correction=True,
    )
    s.step("observe", usage=_chat(9000, 600, cached=8000, reasoning=200))
    turns = (
        ([_p("mixed_cjk_ascii", "user_text")], 1.3),
        ([_p("code", "tool_call"), _p("json_pretty", "tool_result")], 0.8),
        ([_o("korean", "user_text"), _o("digits", "tool_result")], 1.05),
        ([_p("prose", "tool_result")], 50.0),  # the weight goes to its bound, 2
        ([_p("long_cjk_under", "tool_result")], 1.0),
        ([_p("emoji", "assistant_text")], 0.0),
        ([_p("random_03", "tool_result"), _p("random_04")], -3.0),  # a prompt smaller than the last
    )
    for i, (parts, factor) in enumerate(turns):
        s.step("append", parts=parts)
        s.step("observe", usage=_chat(s.report(factor), 300 + 40 * i, cached=5000, reasoning=90 * i))
    # only removals since the report: the correction stays where it was
    s.step("remove", parts=[_p("long_cjk_under", "tool_result")], placeholders=[_p("space", "tool_result")])
    s.step("observe", usage=_chat(s.report(1.0), 10, reasoning=0))
    s.step("append", parts=[_p("chinese", "user_text")], messages=0)
    s.step("compacted", parts=[_p("prose", "summary")])
    s.step("append", parts=[_p("code", "user_text")])
    s.step("observe", usage=_chat(s.report(1.2), 77, cached=0, reasoning=33))

    # OpenCode behind a prompt cap: the Responses API, every reasoning kept, dropped by count.
    s = script(
        "opencode with an input limit: OpenAI Responses usage with details, all reasoning kept",
        "charclass",
        provider="openai",
        model="gpt-5",
        window=400_000,
        output_reserve=128_000,
        input_limit=272_000,
        rule="opencode",
        reasoning="include",
        tool="opencode",
    )
    s.step("set_static", tools="json_compact")
    s.step("append", parts=[_p("prose", "user_text"), _p("code", "file")])
    s.step("observe", usage=_responses(s.report(1.0) + 12, 240, cached=0, reasoning=300))
    s.step("append", parts=[_p("json_pretty", "tool_result")])
    s.step("observe", usage=_responses(s.report(0.9), 180, cached=4000, reasoning=250))
    s.step("append", parts=[_p("accents_cyrillic_arabic", "user_text")])
    s.step("remove", tokens=550)  # the agent drops the reasoning it had kept
    s.step("observe", usage=_responses(s.report(1.0), 90, cached=4000, reasoning=0))
    s.step("compacted")
    s.step("append", parts=[_p("whitespace", "user_text")])
    s.step("observe", usage=_responses(s.report(1.0), 45, reasoning=12))
    s.step("remove", parts=[_p("whitespace", "user_text")], tokens=2.5)
    s.step("remove", tokens=-40)

    # gemini-cli on a Gemini the config has no model of: the provider's fitted static of the tool,
    # its negative message framing, thoughts and cached content, the correction on.
    s = script(
        "gemini-cli on an unknown Gemini: the tool's fitted static, Gemini usage with thoughts and cache, correction on",
        "charclass",
        provider="google",
        model="gemini-9-ultra",
        window=1_048_576,
        tool="gemini-cli",
        reasoning="include",
        correction=True,
    )
    s.step("append", parts=[_p("prose", "user_text")])
    s.step("observe", usage=_gemini(s.report(1.0) - 3, 80, thoughts=120, cached=0))
    s.step("append", parts=[_o("long_ascii", "tool_result")])
    s.step("append", parts=[_p("emoji", "assistant_text")], messages=0)
    s.step("observe", usage=_gemini(s.report(1.07), 200, thoughts=64, cached=9000))
    s.step("remove", parts=[_p("long_ascii", "tool_result")], placeholders=[_p("space", "tool_result")])
    s.step("append", parts=[_p("empty")])
    s.step("observe", usage=_gemini(s.report(0.95), 5))
    s.step("append", parts=[_p("math_astral", "user_text")])
    s.step("compacted", parts=[_p("prose", "summary"), _p("code", "summary")])
    s.step("append", parts=[_p("zwj_and_flags", "user_text")])
    s.step("observe", usage=_gemini(s.report(1.0), 50, thoughts=0, cached=1000))
    s.step("append", parts=[_p("lone_high", "user_text")])

    # OpenCode 2 from the tool's name: AI SDK usage; and with a prompt cap.
    s = script(
        "opencode-2 from the tool: AI SDK usage with reasoning and cached input",
        "chars4",
        provider="openai",
        model="gpt-5",
        window=200_000,
        output_reserve=32_000,
        tool="opencode",
    )
    s.step("append", parts=[_p("prose", "user_text")])
    s.step("observe", usage=_ai_sdk(s.report(1.0), 120, reasoning=40, cached=0))
    s.step("append", parts=[_p("code", "tool_call"), _p("json_compact", "tool_result")], messages=3)
    s.step("observe", usage=_ai_sdk(s.report(1.0) + 9, 60, reasoning=0, cached=3000))
    s.step("append", parts=[_p("long_code", "tool_result")])
    s.step("append", parts=[_p("long_code", "tool_result")])
    s.step("append", parts=[_p("long_code", "tool_result")])
    s.step("append", parts=[_p("long_code", "tool_result")])
    s.step("observe", usage=_ai_sdk(s.report(1.0), 60, reasoning=7))
    s = script(
        "opencode-2 with an input limit below its window",
        "cjk",
        provider="openai",
        model="gpt-5",
        window=200_000,
        output_reserve=32_000,
        input_limit=150_000,
        rule="opencode-2",
    )
    s.step("observe", usage=_ai_sdk(129_990, 10))
    s.step("append", parts=[_p("four_letters", "user_text")])

    # The strict rules: at their limit they do not compact yet.
    s = script(
        "dexto with max_context_tokens given: strict, so a total at the limit does not compact",
        "chars4",
        provider="nobody",
        window=128_000,
        tool="dexto",
        rule={"name": "dexto", "max_context_tokens": 64_000},
    )
    s.step("append", parts=[_p("prose", "user_text")])
    s.step("observe", usage=_ai_sdk(57_000, 600))
    s.step("append", parts=[_p("one_letter", "user_text")])
    s = script(
        "opencode-2025: strict at its limit",
        "cjk",
        provider="anthropic",
        window=128_000,
        rule="opencode-2025",
    )
    s.step("observe", usage=_chat(107_000, 1_000))
    s.step("append", parts=[_p("space")])
    s = script(
        "claude-code-early with an output reserve above the preset's",
        "charclass",
        provider="anthropic",
        model="claude-opus-4-20250514",
        window=200_000,
        output_reserve=32_000,
        rule="claude-code-early",
    )
    s.step("observe", usage=_anthropic(154_000, 999, read=150_000))
    s.step("append", parts=[_p("one_letter")])
    s.step("append", parts=[_p("four_letters")])
    for name, share in (("gemini-cli-0.16", 0.2), ("gemini-cli-0.11", 0.7)):
        s = script(
            f"{name}: compresses at {share} of the window",
            "cjk",
            provider="google",
            model="gemini-2.5-pro",
            window=1_048_576,
            rule=name,
            tool="gemini-cli",
        )
        s.step("observe", usage=_gemini(int(share * 1_048_576) - 170, 150, thoughts=40))
        s.step("append", parts=[_p("prose", "user_text")])
        s.step("append", parts=[_p("json_pretty", "tool_result")])

    # Presets with a parameter of their own, and custom rules.
    s = script(
        "gemini-cli's rule with its threshold given",
        "cjk",
        provider="google",
        model="gemini-2.5-pro",
        window=100_000,
        rule={"name": "gemini-cli", "threshold": 0.7},
    )
    s.step("observe", usage=_gemini(69_999, 0))
    s.step("observe", usage=_gemini(69_999, 1))
    s = script("custom rule: a share", "chars4", provider="zeta", window=128_000, rule={"share": 0.75})
    s.step("append", parts=[_p("long_ascii", "file")])
    s.step("append", parts=[_p("long_ascii", "file")])
    s = script("custom rule: a reserve", "cjk", provider="zeta", window=200_000, rule={"reserve": 50_000})
    s.step("observe", usage=_anthropic(134_999, 1))
    s = script(
        "custom rule: a share and a reserve, a threshold between two counts",
        "charclass",
        provider="bedrock",
        model="shared-model",
        window=131_072,
        rule={"share": 0.85, "reserve": 16_384, "name": "custom"},
    )
    s.step("observe", usage=_chat(97_484, 0))
    s.step("observe", usage=_chat(97_485, 0))
    s = script("no rule and no tool: custom at 0.9", "chars4", provider="openai", window=64_000)
    s.step("append", parts=[_p("json_compact", "tool_result")], messages=1)
    s = script(
        "codex's rule with a token limit given, and a sub-agent's fitted static",
        "chars4",
        provider="unknown",
        window=258_400,
        tool="codex/review",
        rule={"name": "codex", "auto_compact_token_limit": 90_000},
    )
    s.step("append", parts=[_p("prose", "user_text")])
    s.step("observe", usage=_responses(90_000, 0))
    s = script(
        "codex's rule with its fraction given",
        "cjk",
        provider="openai",
        window=258_400,
        rule={"name": "codex", "fraction": 0.8},
    )
    s.step("observe", usage=_responses(206_720, 0))
    s = script(
        "opencode's rule with reserved given and an input limit; the sub-agent's fitted static",
        "charclass",
        provider="unknown",
        window=128_000,
        input_limit=100_000,
        tool="opencode/subagent",
        rule={"name": "opencode", "reserved": 10_000},
    )
    s.step("append", parts=[_p("code", "user_text")])
    s = script(
        "opencode's rule without an input limit", "chars4", provider="google", window=128_000, rule="opencode"
    )
    s.step("append", parts=[_p("code", "user_text")])
    s = script(
        "dexto's rule with max_context_tokens null (no cap)",
        "chars4",
        provider="nobody",
        window=50_000,
        rule={"name": "dexto", "max_context_tokens": None},
    )
    s.step("observe", usage=_ai_sdk(45_000, 0))

    # Breakdowns clamped: a fitted static larger than the reported prompt, the agent's texts larger
    # than it (tools cut first, then system, then reasoning), a total clamped at 0, and an estimate
    # below the static overhead.
    s = script(
        "clamped breakdowns",
        "chars4",
        provider="anthropic",
        model="claude-3-haiku",
        window=200_000,
        reasoning="include",
    )
    s.step("observe", usage=_anthropic(900, 100))
    s.step("set_static", system="prose", tools="long_code")
    s.step("observe", usage=_gemini(30_000, 100, thoughts=400))
    s.step("observe", usage=_gemini(500, 100, thoughts=400))
    s.step("remove", parts=[_p("long_ascii", "tool_result")])
    s.step("append", parts=[_p("code", "user_text")])
    s.step("compacted", parts=[_p("prose", "summary")])
    s.step("remove", parts=[_p("long_ascii", "tool_result")], placeholders=[_p("prose")])
    s = script(
        "negative message framing: an estimate below zero, clamped",
        "cjk",
        provider="google",
        model="gemini-9-ultra",
        window=1_000_000,
        tool="gemini-cli",
    )
    s.step("append", parts=[], messages=20_000)
    s.step("append", parts=[_p("empty"), _p("empty"), _p("empty")])
    s.step("append", parts=[_p("one_letter", "user_text")], messages=-1)
    s.step("append", parts=[_p("prose", "user_text")], messages=2.5)
    s.step("set_static", system="empty", tools="empty")

    # Windows: the default output reserve, the smallest windows, a reserve of -0.0 (0).
    for window in (30_000, 2, 1):
        s = script(
            f"a window of {window} and the default output reserve", "chars4", provider="zeta", window=window
        )
        s.step("append", parts=[_p("four_letters")])
        s.step("observe", usage=_anthropic(0, 0))
    s = script("an output reserve of -0.0 (0)", "chars4", provider="zeta", window=1000, output_reserve=-0.0)
    s.step("observe", usage=_anthropic(999, 1))
    script(
        "an output reserve of null is the default",
        "chars4",
        provider="zeta",
        window=1000,
        output_reserve=None,
    )

    # Conventions named explicitly.
    s = script(
        "conventions named explicitly",
        "cjk",
        provider="openai",
        model="gpt-5",
        window=400_000,
        reasoning="include",
    )
    s.step("observe", usage={"input_tokens": 7000, "output_tokens": 300}, convention="openai")
    s.step("observe", usage={"input_tokens": 7000, "output_tokens": 300}, convention="anthropic")
    both = {
        "input_tokens": 7000,
        "cache_read_input_tokens": 5000,
        "input_tokens_details": {"cached_tokens": 5000},
    }
    s.step("observe", usage={**both, "output_tokens": 10}, convention="anthropic")
    s.step("observe", usage={**both, "output_tokens": 10}, convention="openai")
    s.step("observe", usage={**both, "output_tokens": 10})
    s.step("observe", usage=_gemini(7100, 20, thoughts=30), convention="gemini")
    s.step("observe", usage=_ai_sdk(7200, 20, reasoning=30), convention="ai-sdk")
    s.step("observe", usage=_responses(7300, 20, reasoning=30), convention=None)

    # Refused input on a live tracker: nothing is taken in (set_static counts the system text it was
    # given before it refuses the tools).
    s = script(
        "refused input on a live tracker", "chars4", provider="anthropic", window=200_000, correction=True
    )
    s.step("append", parts=[_p("prose", "user_text")])
    s.step("observe", usage=_anthropic(2000, 100))
    s.step("append", parts=[_p("code", "user_text")])
    for usage, convention in (
        ({"output_tokens": 5}, None),
        ({"input_tokens": -3}, None),
        ({"prompt_tokens": "12"}, None),
        ({"promptTokenCount": 10, "thoughtsTokenCount": True}, None),
        ({"inputTokens": 1.5}, None),
        ({"inputTokens": None}, None),
        ({"input_tokens": 5, "cache_read_input_tokens": -1}, None),
        ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 2.5}}, None),
        ({"prompt_tokens": 1e300}, None),
        ({"input_tokens": 10}, "bedrock"),
        ({"input_tokens": 10}, ["openai"]),
        ({"input_tokens": 10}, 3),
        ({"prompt_tokens": 100}, "anthropic"),
        ([], None),
        (None, None),
        ("input_tokens", None),
    ):
        s.step("observe", usage=usage, **({} if convention is None else {"convention": convention}))
    s.step("set_static", system={"value": 42})
    s.step("set_static", system="prose", tools={"value": ["a"]})
    s.step("append", parts=[_p("prose")], messages="2")
    s.step("append", parts=[_p("prose")], messages=True)
    s.step("append", parts=[_p("prose")], messages=1e16)
    s.step("remove", parts=[_p("prose")], tokens="x")
    s.step("remove", tokens=None)
    s.step("remove", tokens=True)
    s.step("remove", tokens=-1e16)
    s.step("observe", usage={"input_tokens": 2100, "output_tokens": 20, "output_tokens_details": None})

    # Options refused.
    refused: tuple[tuple[str, dict[str, Any]], ...] = (
        ("a window of 0", {"window": 0}),
        ("a negative window", {"window": -5}),
        ("a fractional window", {"window": 1.5}),
        ("a window as text", {"window": "200k"}),
        ("a window as a boolean", {"window": True}),
        ("a window of null", {"window": None}),
        ("a window beyond 2**53 - 1", {"window": 2**53}),
        ("a window of 1e300", {"window": 1e300}),
        ("a window equal to the output reserve", {"window": 1000, "output_reserve": 1000}),
        ("a window below the output reserve", {"window": 1000, "output_reserve": 5000}),
        ("a window of 1 with a reserve", {"window": 1, "output_reserve": 1}),
        ("a negative output reserve", {"window": 1000, "output_reserve": -1}),
        ("a fractional output reserve", {"window": 1000, "output_reserve": 0.5}),
        ("an output reserve as text", {"window": 1000, "output_reserve": "x"}),
        ("an input limit of 0", {"window": 1000, "input_limit": 0}),
        ("a fractional input limit", {"window": 1000, "input_limit": 1.5}),
        ("an unknown rule", {"window": 1000, "rule": "gemini"}),
        ("a rule as a number", {"window": 1000, "rule": 5}),
        ("a rule as a list", {"window": 1000, "rule": ["codex"]}),
        ("a rule of an unknown name", {"window": 1000, "rule": {"name": "nope"}}),
        ("a rule named by a list", {"window": 1000, "rule": {"name": ["codex"]}}),
        ("a rule named null", {"window": 1000, "rule": {"name": None}}),
        ("a parameter the preset has not", {"window": 1000, "rule": {"name": "codex", "share": 0.5}}),
        ("a parameter no custom rule has", {"window": 1000, "rule": {"bogus": 1}}),
        ("a share as text", {"window": 1000, "rule": {"share": "0.8"}}),
        ("a negative share", {"window": 1000, "rule": {"share": -0.1}}),
        ("a share of null", {"window": 1000, "rule": {"share": None}}),
        ("a threshold of null", {"window": 1000, "rule": {"name": "gemini-cli", "threshold": None}}),
        ("a threshold as a boolean", {"window": 1000, "rule": {"name": "dexto", "threshold": True}}),
        ("a reserve beyond the bound", {"window": 1000, "rule": {"reserve": 2e100}}),
        ("an unknown policy", {"window": 1000, "reasoning": "strip"}),
        ("a policy in capitals", {"window": 1000, "reasoning": "INCLUDE"}),
        ("a policy of null", {"window": 1000, "reasoning": None}),
    )
    for case, options in refused:
        script(f"refused: {case}", "chars4", provider="zeta", **options)

    # Seeded random walks: each config under each policy, random rules, tools and conventions.
    rng = random.Random(SEED + 2)
    short = [name for name, text in strings.items() if len(text) < 5000]
    kinds = [k for k in KINDS if k]
    conventions = ("anthropic", "chat", "responses", "gemini", "ai-sdk")
    for config in ("chars4", "cjk", "charclass"):
        for policy in runtime.REASONING_POLICIES:
            provider, model = rng.choice(_WALK_NAMES)
            s = script(
                f"random walk: {config}, {policy}",
                config,
                provider=provider,
                model=model,
                window=rng.choice([32_768, 128_000, 200_000, 400_000, 1_048_576]),
                rule=rng.choice(_WALK_RULES),
                reasoning=policy,
                tool=rng.choice(TOOLS),
                correction=rng.random() < 0.5,
            )
            for _ in range(24):
                action = rng.random()
                if action < 0.4:
                    parts = [
                        _p(rng.choice(short), rng.choice([None, *kinds])) for _ in range(rng.randint(0, 4))
                    ]
                    s.step(
                        "append",
                        parts=parts,
                        **({"messages": rng.randint(0, 3)} if rng.random() < 0.2 else {}),
                    )
                elif action < 0.55:
                    s.step(
                        "remove",
                        parts=[_p(rng.choice(short), "tool_result") for _ in range(rng.randint(0, 2))],
                        placeholders=[_p("four_letters", "tool_result")] if rng.random() < 0.5 else [],
                        tokens=rng.choice([0, 0, 0, 120, 2.5]),
                    )
                elif action < 0.6:
                    s.step(
                        "compacted", parts=[_p(rng.choice(short), "summary")] if rng.random() < 0.7 else []
                    )
                elif action < 0.65:
                    s.step(
                        "set_static",
                        **{k: rng.choice(short) for k in ("system", "tools") if rng.random() < 0.6},
                    )
                else:
                    prompt = s.report(rng.choice([1.0, 1.0, 0.9, 1.15, rng.uniform(0.5, 2.5)]))
                    visible, reasoning = rng.randint(0, 3000), rng.choice([0, rng.randint(0, 2000)])
                    convention = rng.choice(conventions)
                    if convention == "anthropic":
                        usage = _anthropic(prompt, visible, read=prompt // 2)
                    elif convention == "gemini":
                        usage = _gemini(prompt, visible, thoughts=reasoning, cached=prompt // 3)
                    elif convention == "ai-sdk":
                        usage = _ai_sdk(prompt, visible, reasoning=reasoning, cached=prompt // 3)
                    elif convention == "chat":
                        usage = _chat(prompt, visible, cached=prompt // 3, reasoning=reasoning)
                    else:
                        usage = _responses(prompt, visible, cached=prompt // 3, reasoning=reasoning)
                    s.step("observe", usage=usage)

    # Preferred bases: each conversation under every load of its config, so the same steps are
    # counted with the preferred base's counter and parameters, and without them (the fallback).
    for config in PREFERRED_LOADS["v2_charclass"]:
        s = script(
            f"anthropic prefers hf:vectors: its fitted static of claude-code ({config})",
            config,
            provider="anthropic",
            model="claude-sonnet-4-5",
            window=200_000,
            tool="claude-code",
        )
        s.step("append", parts=[_p("prose", "user_text"), _o("code", "tool_result")])
        s.step("observe", usage=_anthropic(s.report(1.05), 120, read=1000))
        s.step("append", parts=[_p("chinese", "assistant_text"), _p("json_pretty", "tool_result")])
        s.step(
            "remove",
            parts=[_p("json_pretty", "tool_result")],
            placeholders=[_p("four_letters", "tool_result")],
        )
        s.step("set_static", system="prose", tools="json_compact")
        s.step("compacted", parts=[_p("japanese", "summary")])
        s.step("append", parts=[_p("emoji", "user_text")])
        s.step("observe", usage=_anthropic(s.report(0.95), 80))
    for config in PREFERRED_LOADS["v2_chars4"]:
        s = script(
            f"google prefers hf:points, reached by a prefixed model; the correction on ({config})",
            config,
            provider="google",
            model="models/gemini-2.5-pro",
            window=1_048_576,
            tool="gemini-cli",
            correction=True,
        )
        s.step("append", parts=[_p("long_mixed_at_limit", "file"), _p("mixed_cjk_ascii", "user_text")])
        s.step("observe", usage=_gemini(s.report(1.2), 300, thoughts=50))
        s.step("append", parts=[_p("math_astral", "tool_result")], messages=2)
        s.step("observe", usage=_gemini(s.report(1.3), 20))
        s.step("append", parts=[_p("korean", "user_text")])
        s = script(
            f"openai prefers cjk, at a model only the preferred base has ({config})",
            config,
            provider="openai",
            model="gpt-5-mini",
            window=400_000,
            tool="codex",
            reasoning="include",
        )
        s.step("append", parts=[_p("json_compact", "tool_call"), _p("cjk_punctuation", "user_text")])
        s.step("observe", usage=_responses(s.report(1.0), 40, reasoning=60))
        s.step("append", parts=[_p("digits", "tool_result")])
    for config in PREFERRED_LOADS["v3_charclass"]:
        s = script(
            f"claude-opus-4 counts with hf:points, its provider with hf:vectors ({config})",
            config,
            provider="anthropic",
            model="claude-opus-4-20250514",
            window=200_000,
            tool="claude-code",
        )
        s.step("append", parts=[_p("prose", "user_text"), _o("json_pretty", "tool_result")])
        s.step("observe", usage=_anthropic(s.report(1.1), 200, read=2000))
        s.step("append", parts=[_p("chinese", "assistant_text"), _p("emoji", "tool_result")])
    # the newer agents' own rules, named by their tool: each compacts on its own limit
    own_rules: tuple[tuple[str, str, str, int], ...] = (
        ("qwen-code", "openai", "gpt-5-mini", 131_072),
        ("llxprt", "google", "gemini-2.5-pro", 1_048_576),
        ("cline", "anthropic", "claude-sonnet-4-5", 200_000),
        ("roo-code", "openai", "gpt-5", 64_000),
    )
    for tool, provider, model, window in own_rules:
        s = script(
            f"the {tool} tool's own rule",
            "charclass",
            provider=provider,
            model=model,
            window=window,
            tool=tool,
        )
        s.step("append", parts=[_p("prose", "user_text"), _p("code", "tool_result")])
        s.step("observe", usage=_chat(s.report(1.1), 300, cached=1000))
        s.step("append", parts=[_p("long_mixed_at_limit", "file")], messages=2)
        s.step("observe", usage=_chat(s.report(0.9), 120))
    s = script(
        "a version 1 config whose own base is a tokenizer, counted by name",
        "v1_hf+counters",
        provider="nobody",
        model="shared-model",
        window=128_000,
        tool="opencode",
    )
    s.step("append", parts=[_p("accents_cyrillic_arabic", "user_text"), _p("emoji", "tool_result")])
    s.step("observe", usage=_ai_sdk(s.report(1.1), 10))
    s.step("append", parts=[_p("combining", "assistant_text")])
    return out


def dumps(doc: dict[str, Any]) -> str:
    """The file's text: ASCII JSON, one vector per line in each list (a tracker's steps one per line too),
    so a diff shows what changed."""
    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        value = doc[key]
        end = "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f"  {json.dumps(key)}: [")
            for j, item in enumerate(value):
                comma = "," if j < len(value) - 1 else ""
                steps = item.get("steps") if isinstance(item, dict) else None
                if not steps:
                    lines.append(f"    {json.dumps(item, sort_keys=True)}{comma}")
                    continue
                head = json.dumps({k: v for k, v in item.items() if k != "steps"}, sort_keys=True)
                lines.append(f'    {head[:-1]}, "steps": [')
                lines.extend(
                    f"      {json.dumps(step, sort_keys=True)}{',' if n < len(steps) - 1 else ''}"
                    for n, step in enumerate(steps)
                )
                lines.append(f"    ]}}{comma}")
            lines.append(f"  ]{end}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m calib.synth.runtime_vectors OUT.json", file=sys.stderr)
        return 2
    Path(args[0]).write_text(dumps(build()), encoding="ascii")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

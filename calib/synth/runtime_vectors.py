"""Conformance vectors for the runtimes agents vendor: inputs, and the integers `calib.runtime` gives.

Every runtime of the calibration config (`calib/runtime.py`, `calib/runtime.ts` and its JavaScript
build) must give exactly these integers, not close ones; a port to another language can be held to
the same file. `python -m calib.synth.runtime_vectors OUT.json` writes it (`make vectors`); the
committed copy is `tests/conformance/runtime_vectors.json`, and a test fails when it is stale.

The file is JSON (ASCII, so lone surrogates are `\\udXXX` escapes). Texts are named once under
`texts`: a string, or `{"repeat": S, "times": N}` for S repeated N times (the long ones). Configs
are named under `configs`: one per base, and one per base with every parameter at the runtimes' bound
(`NAME_at_bounds`: ratios and class weights 1e100, overheads +-1e100), whose counts of the longest
texts are integers near 1e216 that both languages must still agree on. A part is `{"form", "kind", "text"}`: form `text` is the bare text,
`pair` the `[kind, text]` pair (a tuple in Python), `object` `{"text", "kind"}`. Sections:

- `bases`: per text, `chars4`, `cjk` and `class_counts` (the charclass counts by code point);
- `names`: `provider`/`model` as given and normalised;
- `lookups`: which level answers (`level`), and the strict lookup's error (`strict_error`, or null);
- `counts`, `parts`, `predictions`, `estimates`: the four calls and their `expect`ed integers;
- `errors`: a config and the message `validate` raises for it;
- `documents`: a config as JSON text (`text`) and the message loading it raises (`message`; null when
  it loads): text-level failures such as nesting deeper than the runtimes read, and numbers that only
  a text can hold (1e309, 400-digit integers). Python's `loads` and TypeScript's `load` of a string.

One difference between languages is out of scope by construction: a Python string may hold a high
surrogate followed by a low one as two code points, which UTF-16 cannot tell from one astral
character. Such strings do not come out of JSON in either language, and no vector holds one.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from calib import runtime
from calib.core.config import validate_config

VECTORS_VERSION = 1
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
            static_overhead_by_tool={"gemini-cli": 8123.4, "opencode": 11020.5, "codex/review": 3000.5},
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


def build() -> dict[str, Any]:
    """The whole vector document."""
    named = texts()
    strings = {name: expand(t) for name, t in named.items()}
    docs = configs()
    cals = {name: runtime.Calibration(doc) for name, doc in docs.items()}
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
    lookups = []
    for config, cal in cals.items():
        for p, m in NAMES:
            try:
                cal.params(p, m, strict=True)
                strict_error = None
            except runtime.UnknownGroupError as exc:
                strict_error = str(exc)
            lookups.append(
                {
                    "config": config,
                    "provider": p,
                    "model": m,
                    "level": cal.params(p, m).level,
                    "strict_error": strict_error,
                }
            )

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
            given = [as_part(x, strings.__getitem__) for x in parts]
            part_vectors.append(
                {
                    "config": config,
                    "parts": parts,
                    "provider": p,
                    "model": m,
                    "messages": messages,
                    "expect": cal.count_parts(given, p, m, messages),
                }
            )
        for i in range(30):
            p, m = rng.choice(NAMES)
            new = parts_of(rng.randint(0, 4), short_names)
            removed = parts_of(rng.choice([0, 0, 1, 2, 3]), text_names if i % 7 == 0 else short_names)
            placeholders = parts_of(rng.choice([0, 1, 2]), short_names)
            removed_tokens = rng.choice([0, 0, 17, 250, 10**6])
            last_ctx = rng.choice([0, 1, 3000, 45_210, 987_654])
            last_carry = rng.choice([0, 12, 800])
            messages = rng.choice([None, None, 0, 2])
            expect = cal.predict_context(
                last_ctx,
                last_carry,
                [as_part(x, strings.__getitem__) for x in new],
                p,
                m,
                messages,
                removed=[as_part(x, strings.__getitem__) for x in removed],
                placeholders=[as_part(x, strings.__getitem__) for x in placeholders],
                removed_tokens=removed_tokens,
            )
            predictions.append(
                {
                    "config": config,
                    "last_ctx": last_ctx,
                    "last_carry": last_carry,
                    "new_parts": new,
                    "provider": p,
                    "model": m,
                    "messages": messages,
                    "removed": removed,
                    "placeholders": placeholders,
                    "removed_tokens": removed_tokens,
                    "expect": expect,
                }
            )
        for _ in range(24):
            p, m = rng.choice(NAMES)
            parts = parts_of(rng.randint(0, 5), short_names)
            messages = rng.choice([None, None, 4])
            tool = rng.choice(TOOLS)
            given = [as_part(x, strings.__getitem__) for x in parts]
            estimates.append(
                {
                    "config": config,
                    "parts": parts,
                    "provider": p,
                    "model": m,
                    "messages": messages,
                    "tool": tool,
                    "expect": cal.estimate_context(given, p, m, messages, tool),
                }
            )

    _extremes(bound_configs(), strings, docs, counts, part_vectors, predictions, estimates)

    return {
        "vectors_version": VECTORS_VERSION,
        "schema_version": runtime.SCHEMA_VERSION,
        "about": "Inputs and the integers calib.runtime gives for them; written by calib.synth.runtime_vectors, "
        "whose docstring describes the format.",
        "texts": named,
        "configs": {**docs, **bound_configs()},
        "bases": bases,
        "names": names,
        "lookups": lookups,
        "counts": counts,
        "parts": part_vectors,
        "predictions": predictions,
        "estimates": estimates,
        "errors": _errors(docs["charclass"]),
        "documents": _documents(docs["charclass"]),
    }


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

    def given(parts: list[dict[str, Any]]) -> list[runtime.Part]:
        return [as_part(x, strings.__getitem__) for x in parts]

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
            expect = cal.count_parts(given(everything), p, m, messages)
            part_vectors.append(
                {
                    "config": config,
                    "parts": everything,
                    "provider": p,
                    "model": m,
                    "messages": messages,
                    "expect": expect,
                }
            )
        for last_ctx, last_carry, removed_tokens, messages in (
            (big, big, 0, None),
            (big, -big, -big, big),
            (0, 0, big, 0),
        ):
            new, removed, placeholders = everything[:3], everything[3:], [part(1, "space")]
            p, m = "anthropic", "claude-sonnet-4-5"
            expect = cal.predict_context(
                last_ctx,
                last_carry,
                given(new),
                p,
                m,
                messages,
                removed=given(removed),
                placeholders=given(placeholders),
                removed_tokens=removed_tokens,
            )
            predictions.append(
                {
                    "config": config,
                    "last_ctx": last_ctx,
                    "last_carry": last_carry,
                    "new_parts": new,
                    "provider": p,
                    "model": m,
                    "messages": messages,
                    "removed": removed,
                    "placeholders": placeholders,
                    "removed_tokens": removed_tokens,
                    "expect": expect,
                }
            )
        for tool in ("gemini-cli", None):
            p, m = "nobody", None
            expect = cal.estimate_context(given(everything), p, m, big, tool)
            estimates.append(
                {
                    "config": config,
                    "parts": everything,
                    "provider": p,
                    "model": m,
                    "messages": big,
                    "tool": tool,
                    "expect": expect,
                }
            )


# -- configs that must be refused ------------------------------------------------------------------------------


def _broken(good: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    def edit(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        doc = copy.deepcopy(good)
        change(doc)
        return doc

    yield "not an object", ["schema_version", 1]
    yield "newer schema", edit(lambda d: d.update(schema_version=2))
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


def _errors(good: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for case, doc in _broken(good):
        try:
            runtime.validate(doc)
        except runtime.CalibrationError as exc:
            out.append({"case": case, "config": doc, "message": str(exc)})
        else:
            raise AssertionError(f"the runtime accepts the broken config {case!r}")
    return out


def _documents(good: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON texts of configs and what loading each gives (see the module docstring)."""
    depth = runtime.MAX_DEPTH

    def with_fit(literal: str) -> str:
        doc = copy.deepcopy(good)
        doc["fit"] = 7777.5
        return json.dumps(doc, indent=2, sort_keys=True).replace("7777.5", literal)

    def with_number(place: Callable[[dict[str, Any]], dict[str, Any]], key: str, literal: str) -> str:
        doc = copy.deepcopy(good)
        place(doc)[key] = 7777.5
        return json.dumps(doc, sort_keys=True).replace("7777.5", literal)

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


def dumps(doc: dict[str, Any]) -> str:
    """The file's text: ASCII JSON, one vector per line in each list, so a diff shows what changed."""
    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        value = doc[key]
        end = "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f"  {json.dumps(key)}: [")
            lines.extend(
                f"    {json.dumps(item, sort_keys=True)}{',' if j < len(value) - 1 else ''}"
                for j, item in enumerate(value)
            )
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

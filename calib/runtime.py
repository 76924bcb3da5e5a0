"""Calibrated token counts from a calib calibration config: the part an agent embeds.

Standard library only, one file, no calib imports: copy it next to your agent and ship the
`calibration.json` that `calib fit` wrote (written for Python 3.9+, tested on 3.11).

    from runtime import load
    cal = load("calibration.json")
    cal.count("some text", provider="google", model="gemini-2.5-pro")
    cal.count_parts([("tool_result", output), ("user_text", prompt)], "google", "gemini-2.5-pro")
    # what /context should show before the next call, from the last call's reported usage:
    cal.predict_context(last_ctx, last_carry, new_parts, "google", "gemini-2.5-pro")
    # ... after pruning an old tool output to a placeholder and dropping reported reasoning tokens:
    cal.predict_context(last_ctx, last_carry, new_parts, "google", "gemini-2.5-pro",
                        removed=[("tool_result", old_output)], placeholders=["[output pruned]"],
                        removed_tokens=reasoning_tokens)
    # a whole prompt with no usage yet: the agent's own system prompt and tool schemas, plus the parts
    cal.estimate_context(parts, "google", "gemini-2.5-pro", tool="gemini-cli")
    # or one tracker per conversation, which keeps the books: one total for /context and compaction,
    # a breakdown that adds up to it, and each call's estimate checked against its usage (`Tracker`)
    tracker = cal.tracker("google", "gemini-2.5-pro", window=1_048_576, tool="gemini-cli")

A part counts `ratio[kind group] * base(text)`, and each message adds `message_overhead`; the sum is
rounded half up. Bases computed here: `chars4`, `cjk` and `charclass`; a `tiktoken:NAME` base needs
the tiktoken package (and its vocabulary file); any other base needs a counter passed in.

Each provider's best base (schema version 2): the config's own `base` needs no tokenizer, and every
provider has parameters for it; a provider may also name a `preferred` base that counts closer (a
tokenizer: `tiktoken:o200k_base` for OpenAI, `hf:gemma3` for Google), with parameters of its own.
The preferred base answers when this runtime can count it: a counter passed in by name,

    cal = load("calibration.json", counters={"hf:gemma3": my_gemma3_count})

or, for `tiktoken:NAME`, the tiktoken package when it is installed and loads that vocabulary. Without
one the provider's tokenizer-free parameters answer, fitted for it all the same: `cal.params(provider,
model).base` says which base answered, `cal.missing_counters()` which preferred bases found no
counter. Configs of version 1 (one base for every provider) still load.

A model may count with a base of its own (schema version 3): the parameters of a model under its
provider's `preferred` that name a `base` apply to that base (Claude Opus 4.7's new tokenizer while
the other Claude models keep the older one). That model answers with its own base when it counts,
else with its tokenizer-free parameters: the provider's preferred base was fitted worse for it.

Which parameters answer (the fallback chain), after normalising the names (`models/gemini-2.5-pro`,
`anthropic.claude-sonnet-4-20250514-v1:0` and `claude-sonnet-4@20250514` all find `gemini-2.5-pro` /
`claude-sonnet-4`):

1. the model under its provider (`level` "provider/model");
2. a provider the config does not know, with a model it knows under some provider: that model
   (the first such provider by name);
3. the provider's own parameters (`level` "provider");
4. the config's `default` (`level` "default"), for a provider it does not know.

`cal.params(provider, model).level` says which one answered. An unknown name is not an error by
default (a new model still gets its provider's or the default correction); `load(..., strict=True)`
(or `params(..., strict=True)`) raises `UnknownGroupError` instead whenever the answer is less
specific than what was asked: a provider that is not in the config, or a model that is not.

Every failure is a `CalibrationError` (a ValueError) naming the field or the argument: a file that
cannot be read, is not UTF-8 or not JSON, a config of the wrong shape, and these bounds, which make
sure that no estimate on a config `validate` accepted can overflow:

- every ratio and class weight is a number from 0 to 1e100 (`MAX_PARAMETER`), every overhead one
  from -1e100 to 1e100. A base counts at most 1.5 per UTF-16 code unit (cjk) or its largest class
  weight per code point (charclass), so for texts of up to 2**53 code units in all and up to 2**53
  messages no sum an estimate makes exceeds 4 * 1e100 * 1e100 * 2**53 (about 4e216), far inside a
  double (1.8e308): every estimate is finite and rounds to an integer. A number that JSON reads as
  infinite (1e309) is beyond the bound like any other;
- the counts passed in (`messages`, `last_ctx`, `last_carry`, `removed_tokens`) are numbers from
  -(2**53 - 1) to 2**53 - 1 (`MAX_COUNT`, the integers a double holds exactly);
- the config's JSON nests at most 64 levels (`MAX_DEPTH`; a calibration config nests 6), checked
  before it is parsed, so that no text can exhaust the interpreter's stack;
- a counter (`counters`, `base_counter`) or `class_counter` passed in must return counts within the same +-MAX_COUNT
  (far more tokens than any text has); a count beyond, NaN or no number is refused.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

SCHEMA_VERSION = 3
# The versions this runtime reads: 1 had one base for every provider, 2 adds a preferred base per
# provider, 3 a base of its own for a model under its provider's preferred one.
SCHEMA_VERSIONS = (1, 2, 3)
RUNTIME_BASES = ("chars4", "cjk", "charclass")

# The bounds of the module docstring: a ratio, class weight or overhead's magnitude; a count passed in;
# how deep a config's JSON may nest, and how deep a calibration config does.
MAX_PARAMETER = 1e100
MAX_COUNT = 2**53 - 1
MAX_DEPTH = 64
CONFIG_DEPTH = 7

# The character classes of the charclass base, in the order of calib's `class_counts`. They partition
# the code points: ASCII letters, ASCII digits, ASCII whitespace (space, \t \n \r \v \f), the rest of
# ASCII, U+3000..U+DFFF (CJK punctuation, kana, ideographs, Hangul; lone surrogates too), and the rest.
CHAR_CLASSES = ("letters", "digits", "whitespace", "punctuation", "cjk", "other")

# A tracker's reasoning policies (which reported reasoning tokens the agent keeps in its prompt: all,
# only the last call's, none) and its default (see `Tracker`).
REASONING_POLICIES = ("include", "strip-all-but-last", "strip-all")
DEFAULT_REASONING = "strip-all"

if TYPE_CHECKING:
    # a text, a (kind, text) pair, or a mapping with "text" and an optional "kind"
    Part = str | tuple[str | None, str] | Mapping[str, Any]


class CalibrationError(ValueError):
    """The config is missing or malformed, or asks for a base this runtime cannot compute."""


class UnknownGroupError(CalibrationError, LookupError):
    """Strict lookup: the config has no parameters of their own for this provider or model."""


# -- names ----------------------------------------------------------------------------------------------

_PREFIXES = re.compile(r"^(?:[a-z]{2}\.)?(?:anthropic|amazon|meta|cohere|mistral|ai21|deepseek|qwen)\.")
_SUFFIXES = (
    re.compile(r"-v\d+(?::\d+)?$"),  # Bedrock model versions: -v1:0
    re.compile(r"@(?:\d{8}|latest)$"),  # Vertex: claude-sonnet-4@20250514
    re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$"),  # claude-...-20250514, gpt-4o-2024-08-06
    re.compile(r"-latest$"),
)


def normalise_provider(provider: str | None) -> str:
    """Provider names compare lowercased and trimmed ("" when unknown)."""
    return (provider or "").strip().lower()


def normalise_model(model: str | None) -> str:
    """A model name without routing prefixes and date or version suffixes, lowercased."""
    name = (model or "").strip().lower()
    name = name.rsplit("/", 1)[-1]  # models/..., google/..., openrouter/anthropic/...
    name = _PREFIXES.sub("", name)
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            stripped = suffix.sub("", name)
            if stripped != name and stripped:
                name, changed = stripped, True
    return name


# -- the base counts (identical to calib's estimators of the same names) ---------------------------------


def _utf16_units(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def chars4(text: str) -> int:
    """OpenCode's and Dexto's estimate: round(UTF-16 length / 4), halves up."""
    return (_utf16_units(text) + 2) >> 2


def cjk(text: str) -> int:
    """gemini-cli's estimate: 0.25 per ASCII UTF-16 unit, 1.5 per other unit, floored (len/4 past 100k)."""
    if text.isascii():
        return len(text) >> 2
    units = _utf16_units(text)
    if units > 100_000:
        return units >> 2
    ascii_units = len(text.encode("ascii", "ignore"))
    return (ascii_units + 6 * (units - ascii_units)) >> 2


def _class_table() -> bytes:
    # Each UTF-8 byte maps to a class marker (indices into CHAR_CLASSES); continuation bytes are
    # deleted, so one marker remains per code point. A lead byte decides the code point's class:
    # 0xE3..0xED start exactly the code points U+3000..U+DFFF.
    table = bytearray(256)
    for byte in range(256):
        char = chr(byte)
        if byte < 128:
            if char.isalpha():
                table[byte] = 0
            elif char.isdigit():
                table[byte] = 1
            elif char in " \t\n\r\x0b\x0c":
                table[byte] = 2
            else:
                table[byte] = 3
        else:
            table[byte] = 4 if 0xE3 <= byte <= 0xED else 5
    return bytes(table)


_CLASS_TABLE = _class_table()
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def class_counts(text: str) -> tuple[int, ...]:
    """Code points of `text` in each of CHAR_CLASSES (a lone surrogate counts as one, in cjk)."""
    marks = text.encode("utf-8", "surrogatepass").translate(_CLASS_TABLE, _CONTINUATION_BYTES)
    return tuple(marks.count(index) for index in range(len(CHAR_CLASSES)))


# -- validation --------------------------------------------------------------------------------------


def _fail(where: str, what: str) -> CalibrationError:
    return CalibrationError(f"{where}: {what}" if where else what)


def _as_float(value: float) -> float:
    """A number as a double, as JSON.parse reads one: an integer too large for a double is infinite."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _show_number(value: float) -> str:
    """A double as JavaScript's String(number) writes it, so that both runtimes' messages agree."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)  # the shortest digits that read back as the same double, as JavaScript's
    mantissa, _, exponent = text.partition("e")
    if not exponent:
        return text
    power = int(exponent)
    if -7 < power < 0:  # JavaScript writes these small fractions without an exponent
        digits = mantissa.lstrip("-").replace(".", "")
        return f"{'-' if value < 0 else ''}0.{'0' * (-power - 1)}{digits}"
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


_SHOWN = 60  # characters of a value an error message shows


def _show(value: Any) -> str:
    """A value for an error message: JSON as json.dumps writes it (ASCII), nested containers elided,
    cut at 60 characters. Never recursing without end, whatever the value's depth or size."""
    text = _shown(value, 0)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _shown(value: Any, depth: int) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return _show_number(_as_float(value))
    if isinstance(value, str):
        # a longer text is cut below; escaping only its start keeps a huge one cheap
        return json.dumps(value[:_SHOWN])
    if isinstance(value, (list, tuple)):
        if depth >= 2:
            return "[...]"
        return "[" + ", ".join(_shown(item, depth + 1) for item in value[:_SHOWN]) + "]"
    if isinstance(value, dict):
        if depth >= 2:
            return "{...}"
        items = itertools.islice(value.items(), _SHOWN)
        return "{" + ", ".join(f"{_shown(str(k), depth + 1)}: {_shown(v, depth + 1)}" for k, v in items) + "}"
    return type(value).__name__


def _number(value: Any, where: str, *, signed: bool = False) -> float:
    """A ratio or weight (0 to MAX_PARAMETER), or with `signed` an overhead (either sign)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"expected a number, got {_show(value)}")
    number = _as_float(value)
    if number != number:
        raise _fail(where, "expected a number, got NaN")
    low = -MAX_PARAMETER if signed else 0.0
    if number < low:
        raise _fail(where, f"expected a number >= {_show_number(low)}, got {_show_number(number)}")
    if number > MAX_PARAMETER:
        raise _fail(where, f"expected a number <= {_show_number(MAX_PARAMETER)}, got {_show_number(number)}")
    return number


def _count(value: Any, name: str) -> Any:
    """A count passed in (messages, tokens); beyond MAX_COUNT an estimate could overflow or lose digits."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and -MAX_COUNT <= value <= MAX_COUNT:
        return value
    raise CalibrationError(f"{name}: expected a number from -{MAX_COUNT} to {MAX_COUNT}, got {_show(value)}")


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"expected an object, got {type(value).__name__}")
    return value


def _check_params(value: Any, where: str, groups: Sequence[str], classes: Sequence[str] | None) -> None:
    params = _object(value, where)
    for key in ("ratios", "message_overhead"):
        if key not in params:
            raise _fail(where, f"missing {key!r}")
    ratios = _object(params["ratios"], f"{where}.ratios")
    for group in groups:
        if group not in ratios:
            raise _fail(f"{where}.ratios", f"missing the ratio of {group!r}")
    for group, ratio in ratios.items():  # a group not listed too: Params reads every ratio
        _number(ratio, f"{where}.ratios.{group}")
    _number(params["message_overhead"], f"{where}.message_overhead", signed=True)
    if params.get("static_overhead") is not None:
        _number(params["static_overhead"], f"{where}.static_overhead", signed=True)
    if params.get("static_overhead_by_tool") is not None:
        by_tool = _object(params["static_overhead_by_tool"], f"{where}.static_overhead_by_tool")
        for tool, static in by_tool.items():
            _number(static, f"{where}.static_overhead_by_tool.{tool}", signed=True)
    if classes is not None:
        weights = _object(params.get("class_weights"), f"{where}.class_weights")
        for name in classes:
            if name not in weights:
                raise _fail(f"{where}.class_weights", f"missing the weight of {name!r}")
        for name, weight in weights.items():
            _number(weight, f"{where}.class_weights.{name}")


def validate(doc: Any) -> None:
    """Check a config's structure and bounds; raise CalibrationError naming the first bad field."""
    top = _object(doc, "")
    version = top.get("schema_version")
    if isinstance(version, bool) or version not in SCHEMA_VERSIONS:
        raise _fail(
            "schema_version",
            f"this runtime reads versions {SCHEMA_VERSIONS[0]} to {SCHEMA_VERSIONS[-1]}, "
            f"the config has {_show(version)}",
        )
    base = top.get("base")
    if not isinstance(base, str) or not base:
        raise _fail("base", f"expected the base estimator's name, got {_show(base)}")
    if version >= 2 and base not in RUNTIME_BASES:
        raise _fail(
            "base",
            f"a version {_show(version)} config's own base needs no tokenizer ({', '.join(RUNTIME_BASES)}), "
            f"got {_show(base)}; a tokenizer is a provider's preferred base",
        )
    kinds = _object(top.get("kind_groups"), "kind_groups")
    groups = top.get("ratio_groups")
    if not isinstance(groups, list) or not groups or not all(isinstance(g, str) for g in groups):
        raise _fail("ratio_groups", "expected a non-empty list of names")
    for kind, group in kinds.items():
        if group not in groups:
            raise _fail(f"kind_groups.{kind}", f"{_show(group)} is not one of ratio_groups")
    if top.get("default_group") not in groups:
        raise _fail("default_group", "expected one of ratio_groups")
    classes: Sequence[str] | None = None
    if base == "charclass":
        classes = top.get("classes")
        if not isinstance(classes, list) or not classes:
            raise _fail("classes", "a charclass config needs its list of character classes")
        unknown = [c for c in classes if c not in CHAR_CLASSES]
        if unknown:
            raise _fail(
                "classes",
                f"unknown class {_show(unknown[0])}; this runtime knows {', '.join(CHAR_CLASSES)}",
            )
    _check_params(top.get("default"), "default", groups, classes)
    providers = _object(top.get("providers", {}), "providers")
    for provider, entry in providers.items():
        where = f"providers.{provider}"
        entry = _object(entry, where)
        _check_params(entry.get("params"), f"{where}.params", groups, classes)
        for model, params in _object(entry.get("models", {}), f"{where}.models").items():
            _check_params(params, f"{where}.models.{model}", groups, classes)
        if "preferred" in entry:
            if version < 2:
                raise _fail(f"{where}.preferred", "a preferred base needs schema version 2")
            _check_preferred(entry["preferred"], f"{where}.preferred", base, groups, version)


def _check_preferred(value: Any, where: str, base: str, groups: Sequence[str], version: int) -> None:
    """A provider's preferred base: its name (not the config's own base, nor charclass, whose class
    weights only the config's own base carries) and its parameters, by provider and by model; from
    version 3 a model's parameters may name a base of their own, under the same rule."""
    preferred = _object(value, where)
    _check_preferred_name(preferred.get("base"), f"{where}.base", base)
    _check_params(preferred.get("params"), f"{where}.params", groups, None)
    for model, params in _object(preferred.get("models", {}), f"{where}.models").items():
        _check_params(params, f"{where}.models.{model}", groups, None)
        if "base" in params:
            if version < 3:
                raise _fail(f"{where}.models.{model}.base", "a model's own base needs schema version 3")
            _check_preferred_name(params["base"], f"{where}.models.{model}.base", base)


def _check_preferred_name(name: Any, where: str, base: str) -> None:
    if not isinstance(name, str) or not name:
        raise _fail(where, f"expected the base estimator's name, got {_show(name)}")
    if name in (base, "charclass"):
        raise _fail(where, f"{_show(name)} cannot be a preferred base here")


# -- the calibration -----------------------------------------------------------------------------------


class Params:
    """The parameters that apply to one (provider, model), and the level they came from."""

    __slots__ = (
        "base",
        "class_weights",
        "level",
        "message_overhead",
        "ratios",
        "static_overhead",
        "static_overhead_by_tool",
    )

    def __init__(
        self, raw: Mapping[str, Any], level: str, classes: Sequence[str] | None, base: str = ""
    ) -> None:
        self.level = level  # "provider/model", "provider" or "default"
        self.base = base  # the base estimator these parameters apply to
        self.ratios: dict = {k: float(v) for k, v in raw["ratios"].items()}
        self.message_overhead = float(raw["message_overhead"])
        static = raw.get("static_overhead")
        self.static_overhead: float | None = None if static is None else float(static)
        # the same overhead for one agent (its own system prompt and tool schemas), by tool name
        self.static_overhead_by_tool: dict = {
            str(k): float(v) for k, v in (raw.get("static_overhead_by_tool") or {}).items()
        }
        weights = raw.get("class_weights")
        self.class_weights: tuple[float, ...] | None = (
            tuple(float(weights[c]) for c in classes) if classes is not None and weights is not None else None
        )

    def static_for(self, tool: str | None) -> float:
        """The static overhead (system prompt and tool schemas) of `tool`'s prompts: the one fitted for
        that agent, else the one fitted over all agents, else 0. A sub-agent's prompts are asked for
        as `TOOL/subagent` (its own system prompt), which falls back to `TOOL`'s; an agent's version
        as `TOOL@VERSION` (its system prompt changes with versions), which falls back to the version's
        minor release, then to no version (see `tool_keys`)."""
        for key in tool_keys(tool):
            if key in self.static_overhead_by_tool:
                return self.static_overhead_by_tool[key]
        return self.static_overhead if self.static_overhead is not None else 0.0

    def __repr__(self) -> str:
        return (
            f"<Params {self.level} base={self.base} ratios={self.ratios} "
            f"message_overhead={self.message_overhead}>"
        )


def tool_keys(tool: str | None) -> tuple[str, ...]:
    """The keys a tool's static overhead is looked up under, most specific first:
    `codex/subagent@0.140.2` -> `codex/subagent@0.140.2`, `codex/subagent@0.140`, `codex/subagent`,
    `codex`. A version is what follows the last `@`; its minor release is its first two dot-separated
    fields."""
    if not tool:
        return ()
    name, at, version = tool.rpartition("@")
    if not at or not name:
        name, version = tool, ""
    keys = []
    if version:
        keys.append(f"{name}@{version}")
        minor = ".".join(version.split(".")[:2])
        if minor != version:
            keys.append(f"{name}@{minor}")
    keys.append(name)
    if "/" in name:
        keys.append(name.split("/", 1)[0])
    return tuple(keys)


def _round(value: float) -> int:
    """Half up, never negative (the agents' Math.round)."""
    return max(0, math.floor(value + 0.5))


def _round_signed(value: float) -> int:
    """Half up, and negative when the value is: a change of size may shrink the prompt."""
    return math.floor(value + 0.5)


def _counted(count: Any, name: str) -> Any:
    """A count a counter passed in returned, refused beyond MAX_COUNT like a count passed in."""
    try:
        if -MAX_COUNT <= count <= MAX_COUNT:  # NaN and what is no number fail here too
            return count
    except TypeError:
        pass
    raise CalibrationError(
        f"{name} returned {_show(count)}; expected a number from -{MAX_COUNT} to {MAX_COUNT}"
    )


def _checked_base_counter(base: str, counter: Callable[[str], int]) -> Callable[[str], int]:
    if not callable(counter):
        raise CalibrationError(f"the counter of {base!r} is not a function: {_show(counter)}")

    def count(text: str) -> int:
        return _counted(counter(text), f"the counter of {base!r}")

    return count


def _checked_class_counter(counter: Callable[[str], Sequence[int]]) -> Callable[[str], Sequence[int]]:
    def count(text: str) -> Sequence[int]:
        counts = counter(text)
        for value in counts:
            _counted(value, "class_counter")
        return counts

    return count


class Calibration:
    """A loaded calibration config: calibrated counts per (provider, model)."""

    def __init__(
        self,
        doc: Mapping[str, Any],
        *,
        counters: Mapping[str, Callable[[str], int]] | None = None,
        base_counter: Callable[[str], int] | None = None,
        class_counter: Callable[[str], Sequence[int]] | None = None,
        strict: bool = False,
    ) -> None:
        validate(doc)
        self.doc = doc
        self.strict = strict  # raise UnknownGroupError rather than fall back (see the module docstring)
        self.base: str = doc["base"]  # the config's own base (in version 2, one without a tokenizer)
        self.kind_groups: dict = dict(doc["kind_groups"])
        self.default_group: str = doc["default_group"]
        self.classes: tuple[str, ...] | None = tuple(doc["classes"]) if self.base == "charclass" else None
        self._class_index = (
            tuple(CHAR_CLASSES.index(c) for c in self.classes) if self.classes is not None else ()
        )
        # counters passed in are held to the bounds the built-in ones keep by construction
        self._class_counter = None if class_counter is None else _checked_class_counter(class_counter)
        given = dict(counters or {})
        if base_counter is not None:
            given[self.base] = base_counter
        self._counters: dict = {name: _checked_base_counter(name, c) for name, c in given.items()}
        if self.base != "charclass" and self.base not in self._counters:
            self._counters[self.base] = _builtin_counter(self.base)  # the config's own base must count
        self._default = Params(doc["default"], "default", self.classes, self.base)
        self._providers: dict = {}
        self._models: dict = {}
        # per provider, its preferred base's (name, provider Params, {model: Params}), used when it counts
        self._preferred: dict = {}
        for provider, entry in doc.get("providers", {}).items():
            key = normalise_provider(provider)
            self._providers[key] = Params(entry["params"], key, self.classes, self.base)
            for model, raw in entry.get("models", {}).items():
                level = f"{key}/{model}"
                self._models[(key, normalise_model(model))] = Params(raw, level, self.classes, self.base)
            preferred = entry.get("preferred")
            if preferred is not None:
                name = preferred["base"]
                models = {
                    normalise_model(model): Params(raw, f"{key}/{model}", None, raw.get("base", name))
                    for model, raw in preferred.get("models", {}).items()
                }
                self._preferred[key] = (name, Params(preferred["params"], key, None, name), models)
        self._cache: dict = {}

    def missing_counters(self) -> list[str]:
        """The preferred bases of this config that no counter counts here (their providers answer
        with the config's own base); finding out loads each tokenizer the first time."""
        names = {name for name, _, _ in self._preferred.values()}
        names.update(p.base for _, _, models in self._preferred.values() for p in models.values())
        return sorted(name for name in names if self._counter(name) is None)

    def _counter(self, base: str) -> Callable[[str], int] | None:
        """The counter of a base: passed in, computed here (chars4, cjk, or tiktoken when installed
        and its vocabulary loads), else None. Looked for once per base."""
        if base not in self._counters:
            try:
                self._counters[base] = _builtin_counter(base)
            except CalibrationError:
                self._counters[base] = None
        counter: Callable[[str], int] | None = self._counters[base]
        return counter

    def params(
        self, provider: str | None = None, model: str | None = None, *, strict: bool | None = None
    ) -> Params:
        """The model's parameters, else its provider's, else the default; an unknown provider with a
        known model name finds the model under any provider. `.level` says which answered.

        Strict (`strict=True`, or the calibration's own `strict`): raise `UnknownGroupError` when the
        provider, or the model, asked for has no parameters of its own.
        """
        key = (provider, model)
        found = self._cache.get(key)
        if strict if strict is not None else self.strict:
            found = found or self._lookup(provider, model)
            self._cache[key] = found
            p, m = normalise_provider(provider), normalise_model(model)
            if (p and p not in self._providers) or (m and "/" not in found.level):
                asked = f"{provider or '?'}/{model}" if m else f"provider {provider!r}"
                known = sorted({*self._providers, *(f"{k[0]}/{k[1]}" for k in self._models)})
                raise UnknownGroupError(
                    f"the calibration has no parameters of {asked} (it would fall back to the "
                    f"{found.level} level); it has: {', '.join(known) or 'only the default'}"
                )
            return found
        if found is None:
            found = self._lookup(provider, model)
            self._cache[key] = found
        return found

    def _lookup(self, provider: str | None, model: str | None) -> Params:
        p, m = normalise_provider(provider), normalise_model(model)
        found = self._models.get((p, m))
        owner = p  # the provider whose parameters answer
        if found is None and p not in self._providers and m:
            matches = sorted(k for k in self._models if k[1] == m)
            found = self._models[matches[0]] if matches else None
            owner = matches[0][0] if matches else p
        if found is None:
            found = self._providers.get(p, self._default)
        preferred = self._preferred.get(owner)
        if preferred is None:
            return found
        name, provider_params, models = preferred
        # the preferred base's own parameters at the same level, else its provider's; a model with a
        # base of its own answers with it, else with its tokenizer-free parameters
        own = models.get(m) if "/" in found.level else None
        if own is not None and own.base != name:
            return own if self._counter(own.base) is not None else found
        if self._counter(name) is not None:
            return own if own is not None else provider_params
        return found

    def base_tokens(self, text: str, params: Params | None = None) -> float:
        """The base count of one text by the base `params` apply to (default: the config's own), with
        the charclass base weighted by `params`' class weights."""
        params = params or self._default
        if params.base != "charclass":
            counter = self._counters.get(params.base)
            assert counter is not None  # a Params of a base is only handed out when it counts
            return float(counter(text))
        counts = self._class_counter(text) if self._class_counter is not None else class_counts(text)
        weights = params.class_weights or ()
        total = 0.0
        for weight, index in zip(weights, self._class_index):  # noqa: B905 (strict= needs 3.10)
            total += weight * counts[index]
        return total

    def group(self, kind: str | None) -> str:
        """The ratio group of a part kind."""
        return self.kind_groups.get(kind, self.default_group) if kind else self.default_group

    def part_tokens(self, text: str, kind: str | None, params: Params) -> float:
        """A part's calibrated count before rounding (no message overhead)."""
        return params.ratios[self.group(kind)] * self.base_tokens(text, params)

    def count(
        self,
        text: str,
        provider: str | None = None,
        model: str | None = None,
        kind: str | None = None,
    ) -> int:
        """Calibrated tokens of one text (no message overhead)."""
        return _round(self.part_tokens(text, kind, self.params(provider, model)))

    def count_parts(
        self,
        parts: Iterable[Part],
        provider: str | None = None,
        model: str | None = None,
        messages: int | None = None,
    ) -> int:
        """Calibrated tokens of parts plus the framing of `messages` messages.

        A part is a text, a `(kind, text)` tuple, or a mapping with `text` and an optional `kind`.
        Without `messages`, every part is one message: calib counts each input part the agent sends
        (user text, tool result, summary) as a message, and new parts between two calls are inputs.
        """
        params = self.params(provider, model)
        total, n_parts = self._sum_parts(parts, params)
        n_messages = n_parts if messages is None else _count(messages, "messages")
        return _round(total + params.message_overhead * n_messages)

    def static_overhead(
        self, provider: str | None = None, model: str | None = None, tool: str | None = None
    ) -> float:
        """The static overhead (system prompt and tool schemas) of `tool`'s prompts to the model: the
        value fitted for that agent, else for all agents pooled, else 0 (see `Params.static_for`)."""
        return self.params(provider, model).static_for(tool)

    def predict_context(
        self,
        last_ctx: int,
        last_carry: int,
        new_parts: Iterable[Part],
        provider: str | None = None,
        model: str | None = None,
        messages: int | None = None,
        *,
        removed: Iterable[Part] = (),
        placeholders: Iterable[Part] = (),
        removed_tokens: int = 0,
    ) -> int:
        """The next prompt's size: the last call's whole prompt and re-sent output, plus the new parts,
        minus what left the context in between.

        `last_ctx` and `last_carry` are exact (the provider reported them), so only the change is
        estimated. `new_parts` are the inputs added since (`messages` messages; one per part without
        it). Removals are estimated the same way, so that pruning does not leave /context showing
        tokens the next prompt no longer carries:

        - `removed`: parts whose text the agent took out of the history (an old tool output it
          pruned), in the forms of `new_parts`;
        - `placeholders`: the texts that replaced them. The messages themselves stay, so neither
          changes any message framing. A bare text counts in the default group, as in `count_parts`;
          give a placeholder its kind, `("tool_result", "[pruned]")`, to count it like the part it
          replaced;
        - `removed_tokens`: a count known exactly (reasoning tokens the provider reported, which the
          agent now drops), subtracted as it is rather than estimated.

        The estimated change is rounded once, half up, and may be negative; the result never is.
        With nothing removed this is `last_ctx + last_carry + count_parts(new_parts, ...)`.
        """
        removed = list(removed)
        placeholders = list(placeholders)
        known = int(_count(last_ctx, "last_ctx")) + int(_count(last_carry, "last_carry"))
        removed_tokens = _count(removed_tokens, "removed_tokens")
        if not removed and not placeholders and not removed_tokens:
            return known + self.count_parts(new_parts, provider, model, messages)
        params = self.params(provider, model)
        added, n_parts = self._sum_parts(new_parts, params)
        taken, _ = self._sum_parts(removed, params)
        put_back, _ = self._sum_parts(placeholders, params)
        n_messages = n_parts if messages is None else _count(messages, "messages")
        change = _round_signed(added + params.message_overhead * n_messages - taken + put_back)
        return max(0, known + change - int(removed_tokens))

    def _sum_parts(self, parts: Iterable[Part], params: Params) -> tuple[float, int]:
        """The unrounded calibrated tokens of parts (no message overhead), and how many there are."""
        total = 0.0
        n_parts = 0
        for part in parts:
            kind, text = _unpack(part)
            total += self.part_tokens(text, kind, params)
            n_parts += 1
        return total, n_parts

    def estimate_context(
        self,
        parts: Iterable[Part],
        provider: str | None = None,
        model: str | None = None,
        messages: int | None = None,
        tool: str | None = None,
    ) -> int:
        """A prompt's size with no usage to start from: the static overhead fitted for the model
        (system prompt and tool schemas; the value of the agent `tool` when the config has one) plus
        the calibrated count of every part."""
        static = self.params(provider, model).static_for(tool)
        return _round(static) + self.count_parts(parts, provider, model, messages)

    def tracker(
        self,
        provider: str | None,
        model: str | None,
        *,
        window: int,
        output_reserve: int | None = None,
        input_limit: int | None = None,
        rule: str | Mapping[str, Any] | None = None,
        reasoning: str = DEFAULT_REASONING,
        tool: str | None = None,
        correction: bool = False,
    ) -> Tracker:
        """A context accountant for one conversation with `model` (see `Tracker`)."""
        return Tracker(
            self,
            provider,
            model,
            window=window,
            output_reserve=output_reserve,
            input_limit=input_limit,
            rule=rule,
            reasoning=reasoning,
            tool=tool,
            correction=correction,
        )


def _unpack(part: Part) -> tuple[str | None, str]:
    if isinstance(part, str):
        return None, part
    if isinstance(part, Mapping):
        return part.get("kind"), part["text"]
    kind, text = part
    return kind, text


def _builtin_counter(base: str) -> Callable[[str], int]:
    if base == "chars4":
        return chars4
    if base == "cjk":
        return cjk
    if base.startswith("tiktoken:"):
        return _tiktoken_counter(base.split(":", 1)[1])
    raise CalibrationError(
        f"the config's base estimator {base!r} cannot be computed by this runtime "
        f"(it computes {', '.join(RUNTIME_BASES)} and tiktoken:NAME); pass counters={{{base!r}: ...}} "
        "to count it yourself"
    )


def _tiktoken_counter(name: str) -> Callable[[str], int]:
    try:
        import tiktoken
    except ImportError:
        raise CalibrationError(
            f"the config's base is tiktoken:{name}, but the tiktoken package is not installed; "
            "pip install tiktoken, or refit with `calib fit --base charclass`"
        ) from None
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception as exc:
        raise CalibrationError(f"tiktoken cannot load the {name!r} vocabulary: {exc}") from None

    def count(text: str) -> int:
        return len(encoding.encode_ordinary(text))

    return count


# A JSON string (to the closing quote, or the end of an unfinished one) or a bracket: what nesting is made of.
_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\(?:.|\Z)[^"\\]*)*(?:"|\Z)|[\[\]{}]', re.S)


def _too_deep(text: str) -> int | None:
    """The line on which `text` nests deeper than MAX_DEPTH, or None; found without recursion."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return text.count("\n", 0, token.start()) + 1
        elif char in "]}":
            depth -= 1
    return None


def _parse_int(digits: str) -> float:
    # Python refuses int() of over 4,300 digits; a double (what JSON.parse makes) of them is infinite
    return int(digits) if len(digits) <= 400 else float(digits)


def _where(path: str | None, line: int | None) -> str:
    if path is not None:
        return f"{path}:{line}: " if line is not None else f"{path}: "
    return f"line {line}: " if line is not None else ""


def _parse(data: str | bytes | bytearray, path: str | None) -> Any:
    """The JSON document of a config's text, every failure a CalibrationError (located by `path`)."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CalibrationError(
                f"{_where(path, None)}the calibration config is not UTF-8 text (at byte offset {exc.start})"
            ) from None
    line = _too_deep(data)
    if line is not None:
        raise CalibrationError(
            f"{_where(path, line)}JSON nested deeper than {MAX_DEPTH} levels "
            f"(a calibration config nests {CONFIG_DEPTH})"
        )
    try:
        return json.loads(data, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{_where(path, exc.lineno)}not valid JSON ({exc.msg})") from None
    except RecursionError:  # only when called this close to the interpreter's recursion limit
        raise CalibrationError(
            f"{_where(path, None)}JSON nested too deep to read this close to the stack's limit"
        ) from None


def _calibration(doc: Any, path: str | None, **options: Any) -> Calibration:
    try:
        return Calibration(doc, **options)
    except UnknownGroupError:
        raise
    except CalibrationError as exc:
        raise CalibrationError(f"{_where(path, None)}invalid calibration config: {exc}") from None


def loads(
    text: str | bytes | bytearray,
    *,
    counters: Mapping[str, Callable[[str], int]] | None = None,
    base_counter: Callable[[str], int] | None = None,
    class_counter: Callable[[str], Sequence[int]] | None = None,
    strict: bool = False,
) -> Calibration:
    """Check a calibration config given as JSON text (str, or UTF-8 bytes) and make a Calibration of it
    (`counters`: a base's counter by its name; `base_counter`: the counter of the config's own base)."""
    doc = _parse(text, None)
    return _calibration(
        doc, None, counters=counters, base_counter=base_counter, class_counter=class_counter, strict=strict
    )


def load(
    path: str,
    *,
    counters: Mapping[str, Callable[[str], int]] | None = None,
    base_counter: Callable[[str], int] | None = None,
    class_counter: Callable[[str], Sequence[int]] | None = None,
    strict: bool = False,
) -> Calibration:
    """Read and check a calibration config file (`strict`: unknown providers and models raise;
    `counters`: a base's counter by its name, for the preferred bases this runtime cannot count)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise CalibrationError(f"cannot read the calibration config {path}: {exc.strerror}") from None
    doc = _parse(data, str(path))
    return _calibration(
        doc,
        str(path),
        counters=counters,
        base_counter=base_counter,
        class_counter=class_counter,
        strict=strict,
    )


# -- the context accountant ----------------------------------------------------------------------------
#
# A Tracker follows one conversation and gives the one number an agent shows as its context and
# compacts on. Between two calls it is the last reported prompt, plus the output that re-enters it,
# plus the calibrated estimate of only what changed since (parts appended, minus parts pruned):
#
#     total = content + visible output + reasoning kept + estimate(since the report)
#
# where `content` is the reported prompt without the reasoning the policy had kept in it. Before the
# first report, and after a compaction until the next one, nothing reported applies and the total is
# an estimate of everything: the static overhead (the agent's system prompt and tool schemas, counted
# from their texts, else the calibration's fitted value) plus every message part in the context.

# The agents' compaction rules: the parameters of each, with their defaults. `rule_limit` gives the
# count at which each compacts; calib replay judges the same rules (calib.analysis.rules reads this).
RULES: dict[str, dict[str, Any]] = {
    "gemini-cli": {"threshold": 0.5},  # from 0.17.0
    "gemini-cli-0.16": {"threshold": 0.2},  # 0.12.0 to 0.16.x
    "gemini-cli-0.11": {"threshold": 0.7},  # up to 0.11.x
    "dexto": {"threshold": 0.9, "max_context_tokens": None},
    "opencode": {"buffer": 20_000, "reserved": None},
    "opencode-2025": {"output_token_max": 32_000},
    "opencode-2": {"buffer": 20_000, "output_token_max": 32_000},
    "claude-code": {"output_reserve": 20_000, "buffer": 13_000},
    "claude-code-early": {"output_reserve": 20_000, "buffer": 25_000},
    "codex": {"fraction": 0.9, "auto_compact_token_limit": None},
    "qwen-code": {"threshold": 0.85, "summary_reserve": 20_000, "buffer": 13_000},
    "llxprt": {"threshold": 0.85},
    "cline": {"fraction": 0.9, "input_share": 0.9},
    "cline-legacy": {},
    "roo-code": {"percent": 100, "buffer_fraction": 0.1},
    "custom": {"share": 0.9, "reserve": None},
}
# Rules that compact only above their limit (`>`); the others compact at it (`>=`).
STRICT_RULES = frozenset({"dexto", "opencode-2025", "roo-code"})
# cline-legacy: the margin below the window at which Cline 3.x truncates, for the windows it names.
CLINE_LEGACY_MARGINS = {64_000: 27_000, 128_000: 30_000, 200_000: 40_000}
# The agent a preset belongs to, for a tracker that names its tool but no rule.
_TOOL_RULES = {
    "gemini-cli": "gemini-cli",
    "dexto": "dexto",
    "opencode": "opencode-2",
    "claude-code": "claude-code",
    "codex": "codex",
    "qwen-code": "qwen-code",
    "llxprt": "llxprt",
    "cline": "cline",
    "roo-code": "roo-code",
}
DEFAULT_OUTPUT_RESERVE = 20_000
# The online correction of the part estimated since the last report (gemini-cli's adaptive weight):
# an exponential moving average of actual / estimated at this rate, kept within these bounds.
CORRECTION_RATE = 0.2
CORRECTION_BOUNDS = (0.5, 2.0)


def rule_limit(
    name: str,
    params: Mapping[str, Any],
    context: float,
    max_output: float,
    input_limit: float | None = None,
) -> float:
    """The count at which rule `name` compacts on a window of `context` tokens, with the model's output
    limit (or the agent's output reserve) `max_output` and its prompt cap `input_limit` (None: none).

    - `gemini-cli`, `gemini-cli-0.16`, `gemini-cli-0.11`: `threshold` × context (0.5 from gemini-cli
      0.17.0, 0.2 from 0.12.0 to 0.16, 0.7 before: the default each release shipped);
    - `dexto`: floor(min(context, max_context_tokens) × threshold);
    - `opencode`: input_limit - (reserved, else min(buffer, max_output)), else context - max_output;
    - `opencode-2025`: context - min(max_output, output_token_max);
    - `opencode-2`: context - max(min(max_output, output_token_max), buffer), and at most
      input_limit - buffer;
    - `claude-code`, `claude-code-early`: context - min(max_output, output_reserve) - buffer;
    - `codex`: auto_compact_token_limit, else floor(fraction × (input_limit, else context));
    - `qwen-code`: min(threshold × context, context - summary_reserve - buffer), or threshold ×
      context when that ceiling is not positive;
    - `llxprt`: threshold × (context - max_output) (the completion budget);
    - `cline`: fraction × (min(input_limit, context), else input_share × context);
    - `cline-legacy`: context - 27k, 30k or 40k for windows of 64k, 128k or 200k
      (`CLINE_LEGACY_MARGINS`), else max(context - 40k, 0.8 × context);
    - `roo-code`: min(percent / 100 × context, (1 - buffer_fraction) × context - max_output);
    - `custom`: share × (context - reserve), the reserve `max_output` unless given.
    """
    p = {**RULES[name], **params}
    if name in ("gemini-cli", "gemini-cli-0.16", "gemini-cli-0.11"):
        return p["threshold"] * context
    if name == "dexto":
        cap = context if p["max_context_tokens"] is None else min(context, p["max_context_tokens"])
        return float(math.floor(cap * p["threshold"]))
    if name == "opencode":
        if input_limit is not None:
            reserved = p["reserved"] if p["reserved"] is not None else min(p["buffer"], max_output)
            return float(input_limit - reserved)
        return float(context - max_output)
    if name == "opencode-2025":
        return float(context - min(max_output, p["output_token_max"]))
    if name == "opencode-2":
        usable = context - max(min(max_output, p["output_token_max"]), p["buffer"])
        if input_limit is not None:
            usable = min(usable, input_limit - p["buffer"])
        return float(usable)
    if name in ("claude-code", "claude-code-early"):
        return float(context - min(max_output, p["output_reserve"]) - p["buffer"])
    if name == "codex":
        if p["auto_compact_token_limit"] is not None:
            return float(p["auto_compact_token_limit"])
        return float(math.floor((input_limit if input_limit is not None else context) * p["fraction"]))
    if name == "qwen-code":
        ceiling = context - p["summary_reserve"] - p["buffer"]
        proportional = p["threshold"] * context
        return float(min(proportional, ceiling)) if ceiling > 0 else float(proportional)
    if name == "llxprt":
        return float(p["threshold"] * (context - max_output))
    if name == "cline":
        usable = min(input_limit, context) if input_limit is not None else p["input_share"] * context
        return float(p["fraction"] * usable)
    if name == "cline-legacy":
        margin = CLINE_LEGACY_MARGINS.get(context)  # type: ignore[call-overload]
        return float(context - margin) if margin is not None else float(max(context - 40_000, 0.8 * context))
    if name == "roo-code":
        return float(min(p["percent"] / 100 * context, (1 - p["buffer_fraction"]) * context - max_output))
    reserve = max_output if p["reserve"] is None else p["reserve"]
    return p["share"] * (context - reserve)


def _rule(rule: str | Mapping[str, Any] | None, tool: str | None) -> tuple[str, dict[str, Any]]:
    """A rule's name and its parameters as given (`custom` when only parameters are)."""
    names = ", ".join(RULES)
    if rule is None:
        return _TOOL_RULES.get(tool or "", "custom"), {}
    if isinstance(rule, str):
        if rule not in RULES:
            raise CalibrationError(f"rule: unknown rule {_show(rule)}; valid rules: {names}")
        return rule, {}
    if not isinstance(rule, Mapping):
        raise CalibrationError(f"rule: expected a rule's name or an object, got {_show(rule)}")
    params = dict(rule)
    name = params.pop("name", "custom")
    if not isinstance(name, str) or name not in RULES:
        raise CalibrationError(f"rule.name: unknown rule {_show(name)}; valid rules: {names}")
    for key, value in params.items():
        if key not in RULES[name]:
            known = ", ".join(RULES[name])
            raise CalibrationError(f"rule.{key}: the {name} rule has no such parameter; it has {known}")
        if value is not None or RULES[name][key] is not None:  # null only where the preset's is
            _number(value, f"rule.{key}")
    return name, params


# -- usage, in each provider's convention --------------------------------------------------------------
#
# Each convention names where its counts are (alternatives in order, dotted paths into nested
# objects), and the style calib's importers normalise it under (calib.core.usage):
#   prompt      the whole prompt (Anthropic: the part not read from or written to the cache)
#   cache_read  prompt tokens read from the cache; cache_write  written to it (Anthropic style adds both)
#   output      the output (OpenAI style: reasoning included, so the visible output is output - reasoning)
#   reasoning   reasoning (thinking) tokens reported apart
# `ai-sdk` is the AI SDK 6 `usage` object, whose inputTokens holds the cached tokens for every provider
# and outputTokens the reasoning; under AI SDK 5 the Anthropic and Bedrock providers left the cache
# out of inputTokens, so add cachedInputTokens (and cache writes) to it before passing such a usage.
USAGE_CONVENTIONS: dict[str, dict[str, Any]] = {
    "anthropic": {
        "style": "anthropic",
        "prompt": ("input_tokens",),
        "cache_read": ("cache_read_input_tokens",),
        "cache_write": ("cache_creation_input_tokens",),
        "output": ("output_tokens",),
        "reasoning": (),
    },
    "openai": {
        "style": "openai",
        "prompt": ("prompt_tokens", "input_tokens"),
        "cache_read": ("prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens"),
        "cache_write": (),
        "output": ("completion_tokens", "output_tokens"),
        "reasoning": (
            "completion_tokens_details.reasoning_tokens",
            "output_tokens_details.reasoning_tokens",
        ),
    },
    "gemini": {
        "style": "gemini",
        "prompt": ("promptTokenCount",),
        "cache_read": ("cachedContentTokenCount",),
        "cache_write": (),
        "output": ("candidatesTokenCount",),
        "reasoning": ("thoughtsTokenCount",),
    },
    "ai-sdk": {
        "style": "openai",
        "prompt": ("inputTokens",),
        "cache_read": ("cachedInputTokens",),
        "cache_write": (),
        "output": ("outputTokens",),
        "reasoning": ("reasoningTokens",),
    },
}
_PROMPT_FIELDS = ("input_tokens", "prompt_tokens", "promptTokenCount", "inputTokens")


def usage_convention(usage: Mapping[str, Any]) -> str:
    """The convention of a usage object, told by its keys (`USAGE_CONVENTIONS`).

    Anthropic and the OpenAI Responses API both say `input_tokens`; Anthropic's cache fields, or
    OpenAI's `*_details`, tell them apart. Without either, both conventions give the same counts.
    """
    if "promptTokenCount" in usage:
        return "gemini"
    if "inputTokens" in usage:
        return "ai-sdk"
    if "prompt_tokens" in usage or "input_tokens_details" in usage or "output_tokens_details" in usage:
        return "openai"
    if "input_tokens" in usage:
        return "anthropic"
    raise CalibrationError(
        f"usage: no prompt count (expected one of {', '.join(_PROMPT_FIELDS)}), got {_show(usage)}"
    )


def _field(usage: Mapping[str, Any], paths: Sequence[str]) -> tuple[str | None, Any]:
    for path in paths:
        value: Any = usage
        for key in path.split("."):
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None:
            return path, value
    return None, None


def _token_count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise CalibrationError(f"{where}: expected a token count, got {_show(value)}")
    if value < 0 or value > MAX_COUNT or value != math.floor(value):
        raise CalibrationError(f"{where}: expected a whole number from 0 to {MAX_COUNT}, got {_show(value)}")
    return int(value)


def read_usage(usage: Mapping[str, Any], convention: str | None = None) -> dict[str, Any]:
    """A call's usage as calib's importers normalise it: `prompt` (the whole prompt, cached and
    uncached: ctx), `output` (the visible output, which re-enters the next prompt), `reasoning`,
    `cache_read`, `cache_write`, and the `convention` and `style` read.

    A count that is absent or null is 0, but the prompt's, which is required; a count that is not a
    whole number from 0 to MAX_COUNT is a CalibrationError naming its field."""
    if not isinstance(usage, Mapping):
        raise CalibrationError(f"usage: expected an object, got {_show(usage)}")
    if convention is None:
        convention = usage_convention(usage)
    elif not isinstance(convention, str) or convention not in USAGE_CONVENTIONS:
        raise CalibrationError(
            f"convention: unknown usage convention {_show(convention)}; valid: {', '.join(USAGE_CONVENTIONS)}"
        )
    table = USAGE_CONVENTIONS[convention]
    counts: dict[str, int] = {}
    for name in ("prompt", "cache_read", "cache_write", "output", "reasoning"):
        path, value = _field(usage, table[name])
        if path is None:
            if name == "prompt":
                raise CalibrationError(
                    f"usage.{table['prompt'][0]}: missing (the prompt count of the {convention} convention)"
                )
            counts[name] = 0
        else:
            counts[name] = _token_count(value, f"usage.{path}")
    prompt = counts["prompt"]
    output = counts["output"]
    if table["style"] == "anthropic":
        prompt += counts["cache_read"] + counts["cache_write"]
    elif table["style"] == "openai":
        output = max(0, output - counts["reasoning"])
    return {
        "convention": convention,
        "style": table["style"],
        "prompt": prompt,
        "output": output,
        "reasoning": counts["reasoning"],
        "cache_read": counts["cache_read"],
        "cache_write": counts["cache_write"],
    }


def _size(value: Any, name: str, *, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise CalibrationError(f"{name}: expected a number of tokens, got {_show(value)}")
    if value < low or value > MAX_COUNT or value != math.floor(value):
        raise CalibrationError(
            f"{name}: expected a whole number from {low} to {MAX_COUNT}, got {_show(value)}"
        )
    return int(value)


class Tracker:
    """The context of one conversation: what `/context` shows, how it breaks down, and when to compact.

        tracker = cal.tracker("anthropic", "claude-sonnet-4-5", window=200_000, tool="claude-code")
        tracker.set_static(system=system_prompt, tools=json.dumps(tool_schemas))
        tracker.append([("user_text", prompt)])
        response = client.messages.create(...)
        tracker.observe(response.usage.model_dump())   # logs the estimate made for this call
        tracker.append([("assistant_text", reply), ("tool_result", output)])
        view = tracker.usage()          # total, breakdown, free, should_compact, last_check, ...
        if view["should_compact"]:
            summary = ...; tracker.compacted([("summary", summary)])

    Options: `window` (the model's context window, tokens); `output_reserve` (room kept for the
    reply; default min(20,000, window / 2)); `input_limit` (a prompt cap below the window, as GPT-5's
    272k); `rule` (a preset of `RULES` by name, an object of its parameters with `name`, or a custom
    `{"share": s, "reserve": r}`: compact at s × (window - r); default: the preset of `tool`, else
    custom at 0.9); `reasoning` (`REASONING_POLICIES`: which reported reasoning tokens the agent
    keeps in its prompt: all, only the last call's, none); `tool` (the agent's name: its fitted
    static overhead and preset); `correction` (scale the part estimated since the last report by
    the running ratio actual / estimated of the earlier calls).
    """

    def __init__(
        self,
        calibration: Calibration,
        provider: str | None,
        model: str | None,
        *,
        window: int,
        output_reserve: int | None = None,
        input_limit: int | None = None,
        rule: str | Mapping[str, Any] | None = None,
        reasoning: str = DEFAULT_REASONING,
        tool: str | None = None,
        correction: bool = False,
    ) -> None:
        self.calibration = calibration
        self.provider = provider
        self.model = model
        self.tool = tool
        self.window = _size(window, "window", low=1)
        if output_reserve is None:
            output_reserve = min(DEFAULT_OUTPUT_RESERVE, self.window // 2)
        self.output_reserve = _size(output_reserve, "output_reserve")
        if self.window <= self.output_reserve:
            raise CalibrationError(
                f"window: {self.window} is not larger than the output reserve ({self.output_reserve})"
            )
        self.input_limit = None if input_limit is None else _size(input_limit, "input_limit", low=1)
        if reasoning not in REASONING_POLICIES:
            raise CalibrationError(
                f"reasoning: unknown policy {_show(reasoning)}; valid policies: {', '.join(REASONING_POLICIES)}"
            )
        self.reasoning = reasoning
        self.rule, self.rule_params = _rule(rule, tool)
        self.threshold = rule_limit(
            self.rule, self.rule_params, self.window, self.output_reserve, self.input_limit
        )
        self.correction = bool(correction)
        self._params = calibration.params(provider, model)
        self._system: int | None = None  # counted from the agent's texts (set_static), else fitted
        self._tools: int | None = None
        self._fitted = _round(self._params.static_for(tool))
        self._known: int | None = None  # reported: content + visible output + reasoning kept
        # unrounded estimates, rounded once where a total is made (as predict_context rounds its change):
        self._since = 0.0  # the change since the last report (appended minus pruned)
        self._messages = 0.0  # every message part in the context (what the estimated basis counts)
        self._kept = 0  # reported reasoning the policy keeps in the next prompt
        self._weight = 1.0
        self._check: dict[str, Any] | None = None

    # -- what the agent tells it --

    def set_static(self, system: str | None = None, tools: str | None = None) -> None:
        """The agent's system prompt and tool schemas (JSON text), counted instead of the fitted
        static overhead. One left out (None) stays as it was."""
        if system is not None:
            self._system = self.calibration.count_parts(
                [("system", _text(system, "system"))], self.provider, self.model
            )
        if tools is not None:
            self._tools = self.calibration.count_parts(
                [("tool_call", _text(tools, "tools"))], self.provider, self.model
            )

    def append(self, parts: Iterable[Part], messages: int | None = None) -> int:
        """Parts added to the conversation (one message each, unless `messages` says how many);
        returns their calibrated estimate."""
        added, n_parts = self.calibration._sum_parts(parts, self._params)
        n_messages = n_parts if messages is None else _count(messages, "messages")
        added += self._params.message_overhead * n_messages
        self._changed(added)
        return _round_signed(added)

    def remove(self, parts: Iterable[Part] = (), placeholders: Iterable[Part] = (), tokens: int = 0) -> int:
        """Parts taken out of the conversation (pruned), each maybe replaced by a placeholder text
        (the messages stay), and `tokens` known exactly (reported reasoning the agent drops).
        Returns the estimated change (negative when the context shrinks)."""
        taken, _ = self.calibration._sum_parts(parts, self._params)
        put_back, _ = self.calibration._sum_parts(placeholders, self._params)
        change = put_back - taken - _count(tokens, "tokens")
        self._changed(change)
        return _round_signed(change)

    def compacted(self, summary_parts: Iterable[Part] = ()) -> None:
        """The history was replaced by `summary_parts` (and whatever is appended next): the count
        is an estimate again until the next report, and no reasoning is kept."""
        self._known = None
        self._since = 0.0
        self._kept = 0
        added, n_parts = self.calibration._sum_parts(summary_parts, self._params)
        self._messages = added + self._params.message_overhead * n_parts

    def observe(self, usage: Mapping[str, Any], convention: str | None = None) -> dict[str, Any]:
        """A call's reported usage (any of `USAGE_CONVENTIONS`, told by its keys unless named).
        Returns the check of the estimate made for this call: estimated, actual, error, error_pct."""
        counts = read_usage(usage, convention)
        return self._observed(counts["prompt"], counts["output"], counts["reasoning"])

    # -- what it tells the agent --

    def usage(self) -> dict[str, Any]:
        """The context before the next call: `total` (the count to show and to compact on), `window`,
        `output_reserve`, `percent` of the window, `free` (window - total - output reserve; negative
        when over), `basis` ("reported" or "estimated"), `breakdown` (system, tools, messages and
        reasoning adding up to total; `clamped` when messages were below zero and were set to 0,
        `fitted` naming the parts that are the fitted static overhead, which system then holds whole),
        `since_report`, `threshold`, `should_compact`, `last_check`, `reasoning`, `rule`, and
        `correction` (the weight applied to since_report, None when off)."""
        total = self._total()
        return {
            "total": total,
            "window": self.window,
            "output_reserve": self.output_reserve,
            "percent": total * 100 / self.window,
            "free": self.window - total - self.output_reserve,
            "basis": "estimated" if self._known is None else "reported",
            "breakdown": self._breakdown(total),
            "since_report": _round_signed(self._since),
            "threshold": self.threshold,
            "should_compact": total > self.threshold
            if self.rule in STRICT_RULES
            else total >= self.threshold,
            "last_check": None if self._check is None else dict(self._check),
            "reasoning": self.reasoning,
            "rule": self.rule,
            "correction": self._weight if self.correction else None,
        }

    # -- the arithmetic (calib replay drives these with counts it has already made) --

    def _changed(self, tokens: float) -> None:
        self._since += tokens
        self._messages += tokens

    def _static(self) -> tuple[int, int, list[str]]:
        if self._system is None and self._tools is None:
            return self._fitted, 0, ["system", "tools"]
        return self._system or 0, self._tools or 0, []

    def _total(self) -> int:
        if self._known is None:
            system, tools, _ = self._static()
            return max(0, system + tools + _round_signed(self._messages))
        since = self._since * self._weight if self.correction else self._since
        return max(0, self._known + _round_signed(since))

    def _breakdown(self, total: int) -> dict[str, Any]:
        system, tools, fitted = self._static()
        reasoning = self._kept
        messages = total - system - tools - reasoning
        clamped = messages < 0
        if clamped:  # the estimated parts are larger than the total: shrink them until they fit
            over = -messages
            messages = 0
            for name in ("tools", "system", "reasoning"):
                value = {"tools": tools, "system": system, "reasoning": reasoning}[name]
                cut = min(value, over)
                over -= cut
                if name == "tools":
                    tools -= cut
                elif name == "system":
                    system -= cut
                else:
                    reasoning -= cut
        return {
            "system": system,
            "tools": tools,
            "messages": messages,
            "reasoning": reasoning,
            "clamped": clamped,
            "fitted": fitted,
        }

    def _observed(self, prompt: int, output: int, reasoning: int) -> dict[str, Any]:
        """A report: `prompt` the whole prompt of the call, `output` its visible output, `reasoning`
        its reasoning tokens. The prompt holds the reasoning the policy kept; the next one holds the
        visible output and the reasoning the policy keeps after this call."""
        estimated = self._total()
        # learn only from a change of a token or more, not from float noise
        if self.correction and self._known is not None and _round_signed(self._since) > 0:
            ratio = (prompt - self._known) / self._since
            low, high = CORRECTION_BOUNDS
            weight = self._weight + CORRECTION_RATE * (ratio - self._weight)
            self._weight = min(high, max(low, weight))
        if self.reasoning == "include":
            kept = self._kept + reasoning
        elif self.reasoning == "strip-all-but-last":
            kept = reasoning
        else:
            kept = 0
        content = prompt - self._kept
        self._known = content + output + kept
        self._kept = kept
        self._since = 0.0
        error = estimated - prompt
        self._check = {
            "estimated": estimated,
            "actual": prompt,
            "error": error,
            "error_pct": None if prompt == 0 else error * 100 / prompt,
        }
        return dict(self._check)


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise CalibrationError(f"{name}: expected a text, got {_show(value)}")
    return value

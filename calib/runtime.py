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

A part counts `ratio[kind group] * base(text)`, and each message adds `message_overhead`; the sum is
rounded half up. Bases computed here: `chars4`, `cjk` and `charclass`; a `tiktoken:NAME` base needs
the tiktoken package (and its vocabulary file); any other base needs a `base_counter` passed in.

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
- a `base_counter` or `class_counter` passed in must return counts within the same +-MAX_COUNT
  (far more tokens than any text has); a count beyond, NaN or no number is refused.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

SCHEMA_VERSION = 1
RUNTIME_BASES = ("chars4", "cjk", "charclass")

# The bounds of the module docstring: a ratio, class weight or overhead's magnitude; a count passed in;
# how deep a config's JSON may nest, and how deep a calibration config does.
MAX_PARAMETER = 1e100
MAX_COUNT = 2**53 - 1
MAX_DEPTH = 64
CONFIG_DEPTH = 6

# The character classes of the charclass base, in the order of calib's `class_counts`. They partition
# the code points: ASCII letters, ASCII digits, ASCII whitespace (space, \t \n \r \v \f), the rest of
# ASCII, U+3000..U+DFFF (CJK punctuation, kana, ideographs, Hangul; lone surrogates too), and the rest.
CHAR_CLASSES = ("letters", "digits", "whitespace", "punctuation", "cjk", "other")

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
    if isinstance(value, (int, float)) and -MAX_COUNT <= value <= MAX_COUNT:
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
    if version != SCHEMA_VERSION:
        raise _fail(
            "schema_version",
            f"this runtime reads version {SCHEMA_VERSION}, the config has {_show(version)}",
        )
    base = top.get("base")
    if not isinstance(base, str) or not base:
        raise _fail("base", f"expected the base estimator's name, got {_show(base)}")
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


# -- the calibration -----------------------------------------------------------------------------------


class Params:
    """The parameters that apply to one (provider, model), and the level they came from."""

    __slots__ = (
        "class_weights",
        "level",
        "message_overhead",
        "ratios",
        "static_overhead",
        "static_overhead_by_tool",
    )

    def __init__(self, raw: Mapping[str, Any], level: str, classes: Sequence[str] | None) -> None:
        self.level = level  # "provider/model", "provider" or "default"
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
        as `TOOL/subagent` (its own system prompt), which falls back to `TOOL`'s."""
        for key in _tool_keys(tool):
            if key in self.static_overhead_by_tool:
                return self.static_overhead_by_tool[key]
        return self.static_overhead if self.static_overhead is not None else 0.0

    def __repr__(self) -> str:
        return f"<Params {self.level} ratios={self.ratios} message_overhead={self.message_overhead}>"


def _tool_keys(tool: str | None) -> tuple[str, ...]:
    """The keys a tool's static overhead is looked up under, most specific first."""
    if not tool:
        return ()
    return (tool, tool.split("/", 1)[0]) if "/" in tool else (tool,)


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


def _checked_base_counter(counter: Callable[[str], int]) -> Callable[[str], int]:
    def count(text: str) -> int:
        return _counted(counter(text), "base_counter")

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
        base_counter: Callable[[str], int] | None = None,
        class_counter: Callable[[str], Sequence[int]] | None = None,
        strict: bool = False,
    ) -> None:
        validate(doc)
        self.doc = doc
        self.strict = strict  # raise UnknownGroupError rather than fall back (see the module docstring)
        self.base: str = doc["base"]
        self.kind_groups: dict = dict(doc["kind_groups"])
        self.default_group: str = doc["default_group"]
        self.classes: tuple[str, ...] | None = tuple(doc["classes"]) if self.base == "charclass" else None
        self._class_index = (
            tuple(CHAR_CLASSES.index(c) for c in self.classes) if self.classes is not None else ()
        )
        # counters passed in are held to the bounds the built-in ones keep by construction
        self._class_counter = None if class_counter is None else _checked_class_counter(class_counter)
        self._base_counter = (
            _checked_base_counter(base_counter)
            if base_counter is not None
            else None
            if self.base == "charclass"
            else _builtin_counter(self.base)
        )
        self._default = Params(doc["default"], "default", self.classes)
        self._providers: dict = {}
        self._models: dict = {}
        for provider, entry in doc.get("providers", {}).items():
            key = normalise_provider(provider)
            self._providers[key] = Params(entry["params"], key, self.classes)
            for model, raw in entry.get("models", {}).items():
                self._models[(key, normalise_model(model))] = Params(raw, f"{key}/{model}", self.classes)
        self._cache: dict = {}

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
        if found is None and p not in self._providers and m:
            matches = sorted(k for k in self._models if k[1] == m)
            found = self._models[matches[0]] if matches else None
        if found is None:
            found = self._providers.get(p, self._default)
        return found

    def base_tokens(self, text: str, params: Params | None = None) -> float:
        """The base count of one text (with the charclass base, weighted by `params`' class weights)."""
        if self.base != "charclass":
            assert self._base_counter is not None
            return float(self._base_counter(text))
        params = params or self._default
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
        f"(it computes {', '.join(RUNTIME_BASES)} and tiktoken:NAME); pass base_counter= to count it yourself"
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
    base_counter: Callable[[str], int] | None = None,
    class_counter: Callable[[str], Sequence[int]] | None = None,
    strict: bool = False,
) -> Calibration:
    """Check a calibration config given as JSON text (str, or UTF-8 bytes) and make a Calibration of it."""
    doc = _parse(text, None)
    return _calibration(doc, None, base_counter=base_counter, class_counter=class_counter, strict=strict)


def load(
    path: str,
    *,
    base_counter: Callable[[str], int] | None = None,
    class_counter: Callable[[str], Sequence[int]] | None = None,
    strict: bool = False,
) -> Calibration:
    """Read and check a calibration config file (`strict`: unknown providers and models raise)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise CalibrationError(f"cannot read the calibration config {path}: {exc.strerror}") from None
    doc = _parse(data, str(path))
    return _calibration(doc, str(path), base_counter=base_counter, class_counter=class_counter, strict=strict)

"""Context windows and output limits of the models calib has seen, for replaying compaction rules.

A `Window` is what a compaction rule needs to know about a model: its whole context window
(`context`), the most output it can be asked for (`max_output`), and, where the provider caps the
prompt below the context, that cap (`input`; GPT-5: 272,000 of 400,000). The built-in table covers
the models in calib's data and sample sessions:

| pattern | context | max output | input cap | source |
|---|---:|---:|---:|---|
| `gemini-*` | 1,048,576 | 65,536 | | `tokenLimit()` in gemini-cli (reference/formats.md 1.6) |
| `claude-*` | 200,000 | 64,000 | | Anthropic's model table (Sonnet 4.x) |
| `gpt-5*` | 400,000 | 128,000 | 272,000 | OpenAI's model table |
| `gpt-4.1*` | 1,047,576 | 32,768 | | OpenAI's model table |
| `deepseek-chat` | 128,000 | 8,192 | | DeepSeek's API docs |

A model name is looked up exactly, then against the patterns in order (shell-style, case-insensitive),
first with the name as recorded and then with any `provider/` prefix removed. A model that matches
nothing has no window: the replay keeps its calls, marked `no_window`, and names the model so the
user can add it. Overrides (a JSON file or a mapping) come before the built-in entries; each value
is a number of tokens (the context window, with the output limit taken from the built-in entry the
name would otherwise match, else 0) or an object `{"context": N, "max_output": N, "input": N}`.
The key `*` matches every model.

What-if windows (`calib.analysis.replay`'s `auto`, `what-if` and `--window N`) keep a model's shape:
`Window.scaled(N)` is the window resized to N tokens with its output limit and input cap in the same
proportion (GPT-5 scaled to 40,000 tokens: 12,800 of output, a 27,200-token prompt cap), so that a rule
whose threshold subtracts the output limit or reads the input cap still has a threshold on it.
`fixed_windows(N)` gives every model its window scaled to N.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calib.core.errors import ConfigError, UsageError
from calib.core.home import expand_home
from calib.core.jsonfile import read_json_file

# The largest window calib replays: 1,000 times the largest model window there is (about 1M tokens),
# and far inside the 64-bit counts the replay's frames hold.
MAX_WINDOW = 1_000_000_000


def window_size(tokens: int) -> int:
    """`tokens` if it is a window calib can replay (1 to `MAX_WINDOW`), else a `UsageError` saying so:
    the one check of `--window N` and `--replay-window N`."""
    if not 0 < tokens <= MAX_WINDOW:
        raise UsageError(
            f"a window of {tokens:,} tokens is out of range",
            hint=f"pass a token count from 1 to {MAX_WINDOW:,}",
        )
    return tokens


@dataclass(frozen=True, slots=True)
class Window:
    """A model's context window, its output limit and, if lower than the window, its prompt cap."""

    context: int
    max_output: int = 0
    input: int | None = None

    def __post_init__(self) -> None:
        if (
            not 0 < self.context <= MAX_WINDOW
            or self.max_output < 0
            or (self.input is not None and not 0 < self.input <= MAX_WINDOW)
        ):
            raise UsageError(
                f"invalid window {self.context}/{self.max_output}/{self.input}",
                hint=f"context and input must be 1 to {MAX_WINDOW:,} tokens, max_output not negative",
            )

    @property
    def max_prompt(self) -> int:
        """The largest prompt the provider accepts: the input cap, else the whole window."""
        return self.input if self.input is not None else self.context

    def to_dict(self) -> dict[str, int | None]:
        """The window as JSON fields."""
        return {"context": self.context, "max_output": self.max_output, "input": self.input}

    def scaled(self, context: int) -> Window:
        """This window resized to `context` tokens, its output limit and input cap in proportion (a
        what-if window keeps the model's shape: GPT-5's prompt cap stays 68% of its window)."""
        if context == self.context:
            return self
        ratio = context / self.context
        input_cap = None if self.input is None else max(1, round(self.input * ratio))
        return Window(context, min(context, round(self.max_output * ratio)), input_cap)


DEFAULT_WINDOWS: tuple[tuple[str, Window], ...] = (
    ("gemini-*", Window(1_048_576, 65_536)),
    ("claude-*", Window(200_000, 64_000)),
    ("gpt-5*", Window(400_000, 128_000, input=272_000)),
    ("gpt-4.1*", Window(1_047_576, 32_768)),
    ("deepseek-chat", Window(128_000, 8_192)),
)


class WindowTable:
    """Model name (or shell pattern) → `Window`, first match wins; overrides go in front."""

    def __init__(
        self,
        entries: Sequence[tuple[str, Window]] = DEFAULT_WINDOWS,
        *,
        fixed: Window | None = None,
        fixed_output: int | None = None,
    ) -> None:
        self.entries: tuple[tuple[str, Window], ...] = tuple(entries)
        # what-if mode (`fixed_windows`): every model gets `fixed.context`, keeping its own output limit
        self.fixed = fixed
        self.fixed_output = fixed_output

    def __iter__(self) -> Iterator[tuple[str, Window]]:
        return iter(self.entries)

    def __repr__(self) -> str:
        return f"<WindowTable {len(self.entries)} entries>"

    def _match(self, name: str) -> Window | None:
        lowered = name.lower()
        for pattern, window in self.entries:
            if pattern.lower() == lowered:
                return window
        for pattern, window in self.entries:
            if fnmatch.fnmatchcase(lowered, pattern.lower()):
                return window
        return None

    def lookup(self, model: str | None) -> Window | None:
        """The window of `model`, or None when no entry matches (or the model is unknown)."""
        if self.fixed is not None:
            if self.fixed_output is not None:
                return self.fixed
            known = WindowTable(self.entries).lookup(model)
            return known.scaled(self.fixed.context) if known is not None else self.fixed
        if not model:
            return self._match("*") if any(p == "*" for p, _ in self.entries) else None
        found = self._match(model)
        if found is None and "/" in model:
            found = self._match(model.rsplit("/", 1)[1])
        return found

    def overridden(self, overrides: Mapping[str, Any]) -> WindowTable:
        """A table whose entries are `overrides` (see the module docstring) followed by these."""
        parsed = [(str(name), _parse_window(name, value, self)) for name, value in overrides.items()]
        # exact names before patterns, so {"*": ..., "gpt-5": ...} keeps gpt-5's own entry
        parsed.sort(key=lambda item: any(ch in item[0] for ch in "*?["))
        return WindowTable([*parsed, *self.entries])

    def to_dict(self) -> dict[str, dict[str, int | None]]:
        """The table as JSON (first entry of a pattern wins, as in `lookup`)."""
        if self.fixed is not None:
            return {"*": {**self.fixed.to_dict(), "max_output": self.fixed_output}}
        out: dict[str, dict[str, int | None]] = {}
        for pattern, window in self.entries:
            out.setdefault(pattern, window.to_dict())
        return out


def _parse_window(name: str, value: Any, base: WindowTable, path: str | None = None) -> Window:
    if isinstance(value, Window):
        return value
    if isinstance(value, bool):
        value = None  # a JSON true/false is not a token count
    if isinstance(value, int):
        known = base.lookup(name) if not any(ch in name for ch in "*?[") else None
        max_output = min(known.max_output, value) if known is not None else 0
        return _window(name, path, value, max_output)
    if isinstance(value, Mapping) and isinstance(value.get("context"), int):
        extra = set(value) - {"context", "max_output", "input"}
        max_output = value.get("max_output", 0)
        input_cap = value.get("input")
        if not extra and isinstance(max_output, int) and (input_cap is None or isinstance(input_cap, int)):
            return _window(name, path, value["context"], max_output, input_cap)
    raise ConfigError(
        f"window of {name!r} is {value!r}",
        path=path,
        hint='give a token count or {"context": N, "max_output": N, "input": N}',
    )


def _window(
    name: str, path: str | None, context: int, max_output: int, input_cap: int | None = None
) -> Window:
    """The window of model `name` from a windows file at `path`, out-of-range sizes an error naming both."""
    try:
        return Window(context, max_output, input_cap)
    except UsageError as exc:
        raise ConfigError(f"window of {name!r}: {exc.what}", path=path, hint=exc.hint) from exc


def load_windows(spec: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None) -> WindowTable:
    """The built-in table, overridden by a mapping or by a JSON file of the same shape."""
    if spec is None:
        return WindowTable()
    if isinstance(spec, WindowTable):
        return spec
    if isinstance(spec, Mapping):
        return WindowTable().overridden(spec)
    path = expand_home(spec)
    _, data = read_json_file(
        path,
        "the windows file",
        hint="pass a JSON file",
        fix='write {"model": {"context": N, "max_output": N}}',
        missing="no such windows file",
    )
    if not isinstance(data, dict):
        raise ConfigError(
            "the windows file is not a JSON object", path=str(path), hint='write {"model": N, ...}'
        )
    base = WindowTable()
    parsed = [(str(k), _parse_window(str(k), v, base, str(path))) for k, v in data.items()]
    return base.overridden(dict(parsed))


def fixed_windows(context: int, max_output: int | None = None) -> WindowTable:
    """A what-if table giving every model a `context`-token window: with `max_output`, that output
    limit and no input cap; else the model's own window scaled to `context` (`Window.scaled`: output
    limit and input cap in proportion), and no output limit for a model not in the table."""
    return WindowTable(fixed=Window(context, min(max_output or 0, context)), fixed_output=max_output)

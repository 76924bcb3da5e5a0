"""Write a runtime beside its calibration config, so that an agent can vendor the two together.

`RUNTIMES` maps a name to what it writes: the package's own copy of the runtime in one language,
`calibration.json` (the config, as it was read, once it validates) and `calib-runtime.md` (the few
lines an agent runs in that language: load the config once, then count before each request).

    ts  calib-runtime.ts                        (calib/runtime.ts)
    js  calib-runtime.mjs, calib-runtime.d.mts  (calib/calib-runtime.mjs and its declarations)
    py  calib_runtime.py                        (calib/runtime.py, under a name that imports)

The output folder may hold other files: only the files named above are written (each atomically,
replacing an earlier copy calib wrote), and nothing else there is touched. A file of one of those names
that calib did not write is refused, as is the store in use (`calib.core.outputs`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from calib.calibration.export import CONFIG_OUTPUT
from calib.core.config import CONFIG_FIX, CONFIG_NAME, preferred_bases, validate_config
from calib.core.errors import CalibError, UsageError
from calib.core.home import expand_home
from calib.core.jsonfile import read_json_file
from calib.core.outputs import OutputKind, check_output, write_output
from calib.core.version import __version__
from calib.runtime import RUNTIME_BASES

CONFIG_FILE = "calibration.json"
GUIDE_FILE = "calib-runtime.md"
DEFAULT_CONFIG = Path(CONFIG_FILE)  # `calib fit` writes it here by default

# A line in the opening comment of every runtime file calib ships (`runtime.py`, `runtime.ts`, the
# JavaScript build and its declarations), in every version so far: how a runtime written by an earlier
# `calib export` is recognised, to be replaced.
RUNTIME_MARK = b"Calibrated token counts from a calib calibration config"
_GUIDE_MARK = b"Written by `calib export`"
_HEAD_BYTES = 1024
_HINT = "name another folder, or move the file away"


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(_HEAD_BYTES)
    except OSError:
        return b""


def _foreign_runtime(path: Path) -> str | None:
    return None if RUNTIME_MARK in _head(path) else "a file that is not a runtime calib wrote"


def _foreign_guide(path: Path) -> str | None:
    head = _head(path)
    ours = head.startswith(b"# calib runtime (") and _GUIDE_MARK in head
    return None if ours else "a file that is not a guide calib wrote"


# What `vendor_runtime` writes, each replacing only a file calib wrote as that kind.
RUNTIME_OUTPUT = OutputKind("the runtime", _foreign_runtime, hint=_HINT)
GUIDE_OUTPUT = OutputKind("the runtime's guide", _foreign_guide, hint=_HINT)
_CONFIG_OUTPUT = dataclasses.replace(CONFIG_OUTPUT, hint=_HINT)


class GuideFacts(NamedTuple):
    """What a guide says about the config it sits beside."""

    base: str
    providers: list[str]
    default_group: str  # the ratio group of a bare text
    # provider -> its preferred base (schema version 2); provider/model -> a model's own (version 3)
    preferred: Mapping[str, str]

    def preferring(self) -> dict[str, list[str]]:
        """Each preferred base, with the providers that prefer it."""
        out: dict[str, list[str]] = {}
        for provider, base in sorted(self.preferred.items()):
            out.setdefault(base, []).append(provider)
        return out


def _preferred_note(facts: GuideFacts, js: bool) -> str:
    """How a guide's reader gets each provider's preferred base counted, and what answers without it."""
    if not facts.preferred:
        return ""
    lines = []
    for base, providers in facts.preferring().items():
        who = ", ".join(f"`{p}`" for p in providers)
        if js:
            how = "js-tiktoken's count, say" if base.startswith("tiktoken:") else "your own count"
            lines.append(f'- {who}: `{base}` ({how}): `counters: {{ "{base}": (text) => count(text) }}`')
        elif base.startswith("tiktoken:"):
            lines.append(f"- {who}: `{base}`: counted by the runtime itself when `tiktoken` is installed")
        else:
            lines.append(f'- {who}: `{base}`: `counters={{"{base}": your_count}}`')
    call = "load(config, { counters })" if js else "load(path, counters=...)"
    missing = "cal.missingCounters()" if js else "cal.missing_counters()"
    return (
        f"\nSome providers and models count best with a tokenizer (their preferred base); pass its counter "
        f"to `{call}`:\n\n"
        + "\n".join(lines)
        + f"\n\nWithout one, that provider's (or model's) own `{facts.base}` parameters answer (fitted for it too); "
        f"`cal.params(provider, model).base` says which base answered, `{missing}` which had no counter.\n"
    )


class Runtime(NamedTuple):
    """One vendorable runtime: the package files it copies (as which names) and its guide."""

    name: str
    language: str
    files: tuple[tuple[str, str], ...]  # (file in the calib package, name written)
    guide: Callable[[GuideFacts], str]

    def written(self) -> list[str]:
        """The names this runtime writes into its folder, in the order they are written."""
        return [name for _, name in self.files] + [CONFIG_FILE, GUIDE_FILE]


def _config_line(facts: GuideFacts) -> str:
    providers = ", ".join(facts.providers) or "none (every provider gets the default correction)"
    return f"- `{CONFIG_FILE}`: the calibration it reads (base `{facts.base}`; providers: {providers})"


_PARTS = (
    "A part is a text, a `[kind, text]` pair or `{{text, kind}}`, and each part is one message. Kinds are the "
    "keys of the config's `kind_groups` (`tool_result`, `user_text`, ...); a bare text, or a kind the config "
    "does not know, counts in its default group (`{group}`)."
)
_PARTS_PY = (
    "A part is a text, a `(kind, text)` tuple or a mapping with `text` and an optional `kind`, and each part "
    "is one message. Kinds are the keys of the config's `kind_groups` (`tool_result`, `user_text`, ...); a "
    "bare text, or a kind the config does not know, counts in its default group (`{group}`)."
)
_USAGE = (
    "Before each request, from the last call's reported usage (`{ctx}`: its whole prompt, cached tokens "
    "included; `{carry}`: the part of its output the next prompt re-sends) and the parts added since:"
)
_LEVEL = '"provider/model", "provider" or "default"'


def _js_base_note(facts: GuideFacts) -> str:
    if facts.base in RUNTIME_BASES:
        return _preferred_note(facts, js=True)
    counter = "js-tiktoken's, say" if facts.base.startswith("tiktoken:") else "your own"
    return (
        f"\nThis config's base is `{facts.base}`, which the runtime does not compute: pass a counter for it "
        f'({counter}), `load(config, {{ counters: {{ "{facts.base}": (text) => count(text) }} }})`, or refit with '
        "`calib fit --base charclass` to need nothing.\n"
    )


def _py_base_note(facts: GuideFacts) -> str:
    if facts.base in RUNTIME_BASES:
        return _preferred_note(facts, js=False)
    if facts.base.startswith("tiktoken:"):
        return (
            f"\nThis config's base is `{facts.base}`: the runtime counts it with the `tiktoken` package "
            "(`pip install tiktoken`), or refit with `calib fit --base charclass` to need nothing.\n"
        )
    return (
        f"\nThis config's base is `{facts.base}`, which the runtime does not compute: pass "
        f'`load(..., counters={{"{facts.base}": your_count}})`, or refit with `calib fit --base charclass`.\n'
    )


def _js_guide(
    source: str, types: str, language: str, import_from: str, import_note: str = ""
) -> Callable[[GuideFacts], str]:
    def guide(facts: GuideFacts) -> str:
        return f"""# calib runtime ({language})

Written by `calib export` (calib {__version__}). Vendor these files together:

- {source}
{types}{_config_line(facts)}
- `{GUIDE_FILE}`: this page

Load the config once, at start-up:

```{"ts" if language == "TypeScript" else "js"}
import {{ readFileSync }} from "node:fs";
import {{ load }} from "{import_from}";{import_note}

const cal = load(JSON.parse(readFileSync(new URL("./{CONFIG_FILE}", import.meta.url), "utf8")));
```

{_USAGE.format(ctx="lastCtx", carry="lastCarry")}

```{"ts" if language == "TypeScript" else "js"}
const contextTokens = cal.predictContext(lastCtx, lastCarry, newParts, provider, model);
const tokens = cal.count(text, provider, model);  // one text
cal.params(provider, model).level;  // which parameters answered: {_LEVEL}
```

Or let a tracker keep the books of one conversation: one number for `/context` and for compaction,
with a breakdown that adds up to it:

```{"ts" if language == "TypeScript" else "js"}
const tracker = cal.tracker({{ provider, model, window: 200_000, tool: "claude-code" }});
tracker.append([["user_text", prompt]]);              // what is added, as it is added
tracker.observe(response.usage);                      // each call's usage, in the provider's convention
const view = tracker.usage();                         // total, breakdown, free, shouldCompact, lastCheck
if (view.shouldCompact) tracker.compacted([["summary", summary]]);
```

{_PARTS.format(group=facts.default_group)}
{_js_base_note(facts)}"""

    return guide


def _py_guide(facts: GuideFacts) -> str:
    return f"""# calib runtime (Python)

Written by `calib export` (calib {__version__}). Vendor these files together:

- `calib_runtime.py`: the runtime (one file, standard library only, Python 3.9+)
{_config_line(facts)}
- `{GUIDE_FILE}`: this page

Load the config once, at start-up:

```python
from pathlib import Path

from calib_runtime import load

cal = load(str(Path(__file__).with_name("{CONFIG_FILE}")))
```

{_USAGE.format(ctx="last_ctx", carry="last_carry")}

```python
context_tokens = cal.predict_context(last_ctx, last_carry, new_parts, provider, model)
tokens = cal.count(text, provider, model)  # one text
cal.params(provider, model).level  # which parameters answered: {_LEVEL}
```

Or let a tracker keep the books of one conversation: one number for `/context` and for compaction,
with a breakdown that adds up to it:

```python
tracker = cal.tracker(provider, model, window=200_000, tool="claude-code")
tracker.append([("user_text", prompt)])  # what is added, as it is added
tracker.observe(response.usage.model_dump())  # each call's usage, in the provider's convention
view = tracker.usage()  # total, breakdown, free, should_compact, last_check
if view["should_compact"]:
    tracker.compacted([("summary", summary)])
```

{_PARTS_PY.format(group=facts.default_group)}
{_py_base_note(facts)}"""


RUNTIMES: dict[str, Runtime] = {
    "ts": Runtime(
        "ts",
        "TypeScript",
        (("runtime.ts", "calib-runtime.ts"),),
        _js_guide(
            "`calib-runtime.ts`: the runtime (one TypeScript module, no dependencies)",
            "",
            "TypeScript",
            "./calib-runtime.js",
            '  // Deno, Bun, or tsc with allowImportingTsExtensions: "./calib-runtime.ts"',
        ),
    ),
    "js": Runtime(
        "js",
        "JavaScript",
        (("calib-runtime.mjs", "calib-runtime.mjs"), ("calib-runtime.d.mts", "calib-runtime.d.mts")),
        _js_guide(
            "`calib-runtime.mjs`: the runtime (one ES module, no dependencies)",
            "- `calib-runtime.d.mts`: its TypeScript declarations (found beside the `.mjs`)\n",
            "JavaScript",
            "./calib-runtime.mjs",
        ),
    ),
    "py": Runtime("py", "Python", (("runtime.py", "calib_runtime.py"),), _py_guide),
}


@dataclass(frozen=True)
class VendorResult:
    """What `vendor_runtime` wrote: which runtime, where, and the config it put beside it."""

    runtime: str
    out: Path
    files: list[str]  # names written in `out`, in order
    config: Path  # the config that was read
    base: str
    providers: list[str]
    replaced: list[str] = field(default_factory=list)  # of `files`, those that were there before

    @property
    def guide(self) -> Path:
        """The page with the lines an agent runs."""
        return self.out / GUIDE_FILE

    def to_dict(self) -> dict[str, Any]:
        """The `calib export --runtime --json` document."""
        return {
            "runtime": self.runtime,
            "out": str(self.out),
            "files": list(self.files),
            "replaced": list(self.replaced),
            "config": str(self.config),
            "base": self.base,
            "providers": list(self.providers),
            "guide": str(self.guide),
        }


def get_runtime(name: str) -> Runtime:
    """The registered runtime of this name; an unknown name is a usage error listing the valid ones."""
    try:
        return RUNTIMES[name]
    except KeyError:
        raise UsageError(f"unknown runtime {name!r}", hint=f"valid runtimes: {', '.join(RUNTIMES)}") from None


def runtime_file(name: str) -> bytes:
    """The bytes of a runtime file shipped in the calib package (`runtime.py`, `calib-runtime.mjs`, ...)."""
    try:
        return resources.files("calib").joinpath(name).read_bytes()
    except OSError as exc:
        raise CalibError(
            f"the calib package has no {name}: {exc.strerror or exc}",
            hint="reinstall calib; the runtimes ship as package data",
        ) from None


def read_config(path: str | os.PathLike[str]) -> tuple[bytes, dict[str, Any]]:
    """A config file's bytes and document, once it validates (a missing one says how to get one)."""
    raw, doc = read_json_file(
        path,
        CONFIG_NAME,
        hint="run `calib fit` to write one, or pass --config PATH",
        fix=CONFIG_FIX,
        missing="no calibration config",
    )
    validate_config(doc, path=str(expand_home(path)))
    return raw, doc


def vendor_runtime(
    runtime: str,
    out: str | os.PathLike[str],
    config: str | os.PathLike[str] = DEFAULT_CONFIG,
    *,
    store: str | os.PathLike[str] | None = None,
) -> VendorResult:
    """Write runtime `runtime` (a name in RUNTIMES), the config at `config` and a short guide into `out`.

    Everything is read and checked before anything is written; only the runtime's own files are written
    in `out` (created if missing), each replaced atomically, and nothing else there is touched. A file of
    those names that calib did not write, or the store `store`, is refused (`UsageError`).
    """
    spec = get_runtime(runtime)
    raw, doc = read_config(config)
    providers = doc.get("providers", {})
    facts = GuideFacts(doc["base"], sorted(providers), doc["default_group"], preferred_bases(doc))
    contents: dict[str, bytes] = {name: runtime_file(source) for source, name in spec.files}
    contents[CONFIG_FILE] = raw
    contents[GUIDE_FILE] = spec.guide(facts).encode("utf-8")
    folder = expand_home(out)
    if folder.exists() and not folder.is_dir():
        raise UsageError(
            f"cannot write the runtime to {folder}: it is not a folder", hint="name a new or existing folder"
        )
    for name in contents:
        if (folder / name).is_dir():
            raise UsageError(
                f"cannot write {name} in {folder}: a folder has that name",
                hint="move it, or name another folder; nothing was written",
            )
    kinds = {name: _kind(name) for name in contents}
    for name, kind in kinds.items():
        check_output(folder / name, kind, store=store)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CalibError(
            f"cannot create the folder: {exc.strerror or exc}", path=str(folder), hint="name another folder"
        ) from None
    replaced = [name for name in contents if (folder / name).exists()]
    for name, data in contents.items():
        write_output(folder / name, data, kinds[name], store=store)
    return VendorResult(
        runtime=spec.name,
        out=folder,
        files=list(contents),
        config=Path(config),
        base=facts.base,
        providers=facts.providers,
        replaced=replaced,
    )


def _kind(name: str) -> OutputKind:
    """What the file `name` in a runtime folder is, to recognise an earlier copy calib wrote."""
    if name == CONFIG_FILE:
        return _CONFIG_OUTPUT
    return GUIDE_OUTPUT if name == GUIDE_FILE else RUNTIME_OUTPUT

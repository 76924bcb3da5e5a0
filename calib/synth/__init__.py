"""Synthetic agent sessions: realistic content, usage from a known rule, written in each agent's real layout.

`generate` makes agent-neutral sessions (`calib.synth.model`) whose usage follows a truth rule (see
`calib.synth.generate` for the definitions); `write_sample` lays them out on disk with the agent's writer
and puts `truth.json` beside them, so ingesting the folder and comparing with the truth is exact.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from calib.core.errors import UsageError
from calib.core.home import expand_home
from calib.synth.generate import (
    DEFAULT_LAYOUT,
    LAYOUT_EVENTS,
    TOOLS,
    check_tool,
    generate,
    resolve_layout,
    truth_document,
)
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage

__all__ = [
    "DEFAULT_LAYOUT",
    "TOOLS",
    "WRITERS",
    "SampleResult",
    "Step",
    "SynthSession",
    "ToolUse",
    "Turn",
    "Usage",
    "generate",
    "layouts",
    "truth_document",
    "write_sample",
    "writer",
]

# tool -> the module that writes its on-disk layouts (each exposes LAYOUTS and write()).
WRITERS: dict[str, str] = {
    "gemini-cli": "calib.synth.gemini_cli",
    "opencode": "calib.synth.opencode",
    "dexto": "calib.synth.dexto",
    "claude-code": "calib.synth.claude_code",
    "codex": "calib.synth.codex",
    "qwen-code": "calib.synth.qwen_code",
    "llxprt": "calib.synth.llxprt",
    "cline": "calib.synth.cline",
    "roo-code": "calib.synth.roo_code",
}
TRUTH_FILE = "truth.json"


def writer(tool: str) -> ModuleType:
    """The writer module of `tool`; a usage error when the tool is unknown or its writer is absent."""
    check_tool(tool)
    name = WRITERS[tool]
    if importlib.util.find_spec(name) is None:
        raise UsageError(f"no writer for {tool} in this build of calib", hint=f"{name} is missing")
    return importlib.import_module(name)


def layouts(tool: str) -> tuple[str, ...]:
    """The layouts `tool`'s writer can produce (and the generator knows the events of)."""
    return tuple(x for x in writer(tool).LAYOUTS if x in LAYOUT_EVENTS[tool])


@dataclass
class SampleResult:
    """What `write_sample` wrote: the data files, the truth file and what they hold."""

    tool: str
    layout: str
    seed: int
    out: Path
    files: list[Path]
    truth: Path
    sessions: int
    calls: int
    calls_by_model: dict[str, int] = field(default_factory=dict)
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The `calib sample --json` document (paths relative to `out`)."""
        return {
            "tool": self.tool,
            "layout": self.layout,
            "seed": self.seed,
            "out": str(self.out),
            "files": [_relative(p, self.out) for p in self.files],
            "truth": _relative(self.truth, self.out),
            "sessions": self.sessions,
            "calls": self.calls,
            "calls_by_model": self.calls_by_model,
            "bytes": self.bytes,
        }


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _size(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            total += os.path.getsize(os.path.join(dirpath, name))
    return total


def write_truth(path: Path, document: dict[str, Any]) -> None:
    """Write a truth document as canonical JSON (sorted keys, fixed indentation, UTF-8, final newline)."""
    path.write_text(
        json.dumps(document, sort_keys=True, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )


def write_sample(
    tool: str,
    out: str | os.PathLike[str],
    *,
    layout: str | None = None,
    sessions: int = 6,
    seed: int = 0,
    providers: Sequence[str] | None = None,
) -> SampleResult:
    """Generate `sessions` sessions of `tool`, write them in `layout` under `out`, and `out/truth.json`.

    `out` must be empty or absent, so a sample never mixes with older files.
    """
    module = writer(tool)
    layout = resolve_layout(tool, layout)
    if layout not in module.LAYOUTS:
        raise UsageError(
            f"the {tool} writer cannot write layout {layout!r}",
            hint=f"use one of: {', '.join(layouts(tool))}",
        )
    root = expand_home(out)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(
            "the output folder is not empty", path=str(root), hint="pass a new folder or remove this one"
        )
    made = generate(tool, sessions=sessions, seed=seed, layout=layout, providers=providers)
    root.mkdir(parents=True, exist_ok=True)
    files = [Path(p) for p in module.write(made, root, layout)]
    document = truth_document(made, tool=tool, layout=layout, seed=seed)
    truth = root / TRUTH_FILE
    write_truth(truth, document)
    return SampleResult(
        tool=tool,
        layout=layout,
        seed=seed,
        out=root,
        files=files,
        truth=truth,
        sessions=len(made),
        calls=int(document["calls"]),
        calls_by_model=dict(document["calls_by_model"]),
        bytes=_size(root),
    )

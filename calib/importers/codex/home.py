"""Where Codex keeps its rollouts, and which archived copy a live one shadows.

`${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-*.jsonl` and `${CODEX_HOME}/archived_sessions/`.
When one rollout is in both, the `sessions/` copy wins (formats.md 9.1). Importers read one file at a
time, so the rule is applied to the archived file: it yields nothing when its counterpart exists,
either at the same path relative to `sessions/` or, since Codex archives rollouts flat, at
`sessions/YYYY/MM/DD/<same name>` dated by the name. Both are read-only existence checks.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SESSIONS = "sessions"
ARCHIVED = "archived_sessions"
_DATE = re.compile(r"^rollout-(\d{4})-(\d\d)-(\d\d)T")


def codex_home() -> Path:
    """`$CODEX_HOME`, else `~/.codex`."""
    home = os.environ.get("CODEX_HOME")
    return Path(home) if home else Path.home() / ".codex"


def default_paths() -> list[Path]:
    """The live and the archived rollout folders of this machine's Codex home."""
    home = codex_home()
    return [home / SESSIONS, home / ARCHIVED]


def live_counterpart(path: Path) -> Path | None:
    """The `sessions/` copy of an archived rollout, when there is one (None for any other file)."""
    parts = path.parts
    if ARCHIVED not in parts[:-1]:
        return None
    at = len(parts) - 1 - parts[:-1][::-1].index(ARCHIVED) - 1
    home = Path(*parts[:at]) if at else Path(path.anchor or ".")
    relative = Path(*parts[at + 1 :])
    candidates = [home / SESSIONS / relative]
    match = _DATE.match(path.name)
    if match:
        candidates.append(home / SESSIONS / match[1] / match[2] / match[3] / path.name)
    for candidate in candidates:
        try:
            if candidate.is_file():
                return candidate
        except OSError:
            continue
    return None

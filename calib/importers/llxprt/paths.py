"""Where llxprt-code keeps its project temp dirs (`<log>/tmp/<sha256 of the project root>/`), per OS.

- Since v0.10.0 the log/state bucket comes from `env-paths('llxprt-code', {suffix: ''})`:
  `$XDG_STATE_HOME/llxprt-code` (else `~/.local/state/llxprt-code`) on Linux,
  `~/Library/Logs/llxprt-code` on macOS, `%LOCALAPPDATA%\\llxprt-code\\Log` on Windows (env-paths'
  `index.js`: any non-empty `XDG_STATE_HOME` / `LOCALAPPDATA` is taken as is). `LLXPRT_LOG_HOME`
  overrides it, else `LLXPRT_CONFIG_HOME`; an override counts only when it is a non-empty absolute path
  (`packages/storage/src/config/path-resolver.ts`, `resolveGlobalLogDir`, `resolveEnvOverride`;
  `docs/reference/application-directories.md`).
- Up to v0.9.x everything lived in `~/.llxprt`, temp dirs in `~/.llxprt/tmp/<hash>/`
  (`packages/core/src/config/storage.ts@v0.9.0`). v0.10+ copies `tmp/` into the log bucket on first
  start and leaves the old one (`packages/cli/src/config/pathMigration.ts`): a session may sit in both,
  and its one uid keeps it once in the store.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import sys
from collections.abc import Mapping
from pathlib import Path, PurePath

APP = "llxprt-code"
LEGACY_DIR = ".llxprt"
OVERRIDES = ("LLXPRT_LOG_HOME", "LLXPRT_CONFIG_HOME")


def _absolute(value: str | None, platform: str) -> str | None:
    """`value` when it is a non-empty absolute path on `platform` (llxprt ignores any other override)."""
    value = (value or "").strip()
    if not value:
        return None
    is_abs = ntpath.isabs(value) if platform == "win32" else posixpath.isabs(value)
    return value if is_abs else None


def log_homes(platform: str, env: Mapping[str, str], home: PurePath) -> list[PurePath]:
    """The folders llxprt-code may have used as its log/state bucket, override first, legacy last."""
    kind = type(home)
    homes: list[PurePath] = []
    for name in OVERRIDES:
        override = _absolute(env.get(name), platform)
        if override is not None:
            homes.append(kind(override))
            break
    if platform == "win32":
        local = env.get("LOCALAPPDATA")  # env-paths takes any value set
        homes.append((kind(local) if local else home / "AppData" / "Local") / APP / "Log")
    elif platform == "darwin":
        homes.append(home / "Library" / "Logs" / APP)
    else:
        state = env.get("XDG_STATE_HOME")
        if state:
            homes.append(kind(state) / APP)
        homes.append(home / ".local" / "state" / APP)
    homes.append(home / LEGACY_DIR)
    unique: list[PurePath] = []
    for folder in homes:
        if folder not in unique:
            unique.append(folder)
    return unique


def temp_roots(platform: str, env: Mapping[str, str], home: PurePath) -> list[PurePath]:
    """The `tmp/` folders holding one folder per project (its `chats/` and `token-usage/`)."""
    return [folder / "tmp" for folder in log_homes(platform, env, home)]


def default_temp_roots() -> list[Path]:
    """`temp_roots` on this machine."""
    return [Path(p) for p in temp_roots(sys.platform, os.environ, Path.home())]

"""The real CLI run inside a private mount namespace: a store on a read-only mount, or on a nearly full
disk. Needs `unshare -m` and `mount` (root, or a user namespace); tests skip with the reason where the
machine does not allow them."""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest


@functools.cache
def _refusal() -> str | None:
    """Why mounts cannot be made here, or None when they can."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    with tempfile.TemporaryDirectory() as folder:
        probe = subprocess.run(
            ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {shlex.quote(folder)}"],
            capture_output=True,
            text=True,
        )
    if probe.returncode != 0:
        return f"mounts are not permitted here: {probe.stderr.strip() or probe.returncode}"
    return None


def need_mounts() -> None:
    """Skip the calling test, with the reason, where a mount namespace cannot be made."""
    reason = _refusal()
    if reason is not None:
        pytest.skip(reason)


def read_only(folder: Path) -> list[str]:
    """The shell steps that bind `folder` over itself, read-only (inside the namespace only)."""
    where = shlex.quote(str(folder))
    return [f"mount --bind {where} {where}", f"mount -o remount,bind,ro {where}"]


def tmpfs(folder: Path, size: str) -> list[str]:
    """The shell step that mounts a tmpfs of `size` (such as "3m") on `folder`."""
    return [f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(folder))}"]


def run_mounted(
    steps: Sequence[str], *args: str | Path, after: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m calib ARGS` after the shell `steps` (mounts, copies), in a mount namespace of its own;
    the shell step `after` (quiet: its output would join calib's) runs once calib is done, and the exit
    code is calib's."""
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "calib", *map(str, args)])
    run = f"exec {command}" if after is None else f"{{ {command}; code=$?; {after}; exit $code; }}"
    script = " && ".join([*steps, run])
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=180, cwd=cwd
    )

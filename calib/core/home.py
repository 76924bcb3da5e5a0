"""`~` in the paths a user gives: a leading `~` or `~user` is that home folder, as in the shell.

Every path calib takes from a user (the store, the sessions to ingest, a file to read, a folder to write)
is expanded here, so that a `~user` naming nobody is one usage error rather than a traceback, and
`--out=~/report` (which the shell leaves alone) does not make a folder named `~`.
"""

from __future__ import annotations

import os
from pathlib import Path

from calib.core.errors import UsageError

__all__ = ["expand_home"]


def expand_home(path: str | os.PathLike[str]) -> Path:
    """`path` with a leading `~` or `~user` replaced by that home folder; a user that does not exist
    (or `~` with no home folder known) is a `UsageError`."""
    target = Path(path)
    try:
        return target.expanduser()
    except RuntimeError:  # pathlib's "Could not determine home directory."
        head = target.parts[0]
        why = "no home folder is set (HOME)" if head == "~" else "there is no such user"
        raise UsageError(
            f"cannot expand {head}: {why}", path=str(target), hint="write the path out in full"
        ) from None

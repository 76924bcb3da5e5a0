"""The progress callback long work reports through: `progress(done, total, what)`.

The CLI draws it as a bar on stderr; a notebook may pass its own or None.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int, str], None]

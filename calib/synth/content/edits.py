"""Edits of a file: a one-line change picked from its text, and the unified diff of it."""

from __future__ import annotations

import random
import re


def unified_diff(path: str, old: str, new: str, line: int) -> str:
    """A small unified diff replacing `old` by `new` at `line`."""
    old_lines = old.splitlines()
    new_lines = new.splitlines()
    out = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
    out.append(f"@@ -{line},{len(old_lines)} +{line},{len(new_lines)} @@")
    out += [f"-{x}" for x in old_lines]
    out += [f"+{x}" for x in new_lines]
    return "\n".join(out) + "\n"


def pick_edit(rng: random.Random, text: str) -> tuple[str, str, int] | None:
    """An (old, new, line) one-line edit of `text`: flip a comparison, change a number, or annotate a line."""
    lines = text.splitlines()
    candidates = [
        i
        for i, line in enumerate(lines)
        if len(line.strip()) > 12
        and not line.strip().startswith(("import", "from", "use ", "package", "#!", "//!", '"""'))
        and lines.count(line) == 1
    ]
    if not candidates:
        return None
    i = rng.choice(candidates)
    old = lines[i]
    indent = old[: len(old) - len(old.lstrip())]
    body = old.strip()
    if "==" in body and rng.random() < 0.5:
        new = old.replace("==", "!=", 1)
    elif re.search(r"\b\d+\b", body):
        new = re.sub(r"\b(\d+)\b", lambda m: str(int(m.group(1)) * 2), old, count=1)
    else:
        comment = "#" if text.lstrip().startswith(('"""', "import", "from", "#")) else "//"
        new = f"{indent}{comment} NOTE: keep in sync with the API schema\n{old}"
    return old, new, i + 1

"""The names and uids Codex sessions, calls and parts are stored under.

Session uid `codex:<session_meta.payload.id>` (the thread id Codex names the rollout after). Call uid
`<session uid>:c<seq>`: a call is the n-th `token_count` that counted a new request. Part uid
`<16 hex digits of a hash of the session uid>:<seq>`, as gemini-cli's: a part is its position in its
session. A rollout read on from where the last read stopped continues both seqs.
"""

from __future__ import annotations

import hashlib

NAME = "codex"
LAYOUT = "codex-jsonl"
LAYOUTS = (LAYOUT,)


def session_uid(native_id: str) -> str:
    """The uid of the Codex session (thread) `native_id`."""
    return f"{NAME}:{native_id}"


def call_uid(session: str, seq: int) -> str:
    """The uid of call `seq` of `session`."""
    return f"{session}:c{seq}"


def part_uid_prefix(session: str) -> str:
    """What every part uid of the session starts with (its seq follows)."""
    return hashlib.blake2b(session.encode(), digest_size=8).hexdigest() + ":"

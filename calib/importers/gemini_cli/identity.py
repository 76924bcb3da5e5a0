"""The uids gemini-cli sessions and parts are stored under.

Session uid `gemini-cli:<sessionId>:<startTime>`: one sessionId spans a file per /clear, and a legacy
`.json` converted to `.jsonl` on resume keeps its startTime, so both files map to one session.

Part uid `<16 hex digits of a hash of the session uid>:<seq>`: a part is its position in its session
(its message is `message_id`). Session uid, message id and index spelled out took 110 bytes a part,
a tenth of all ingest writes. A log read on from where the last read stopped continues the seqs.
"""

from __future__ import annotations

import hashlib

NAME = "gemini-cli"


def session_uid(session_id: str, start: str) -> str:
    """The uid of the session `session_id` that started at `start` (the empty string when unknown)."""
    return f"{NAME}:{session_id}:{start}"


def part_uid_prefix(session_uid: str) -> str:
    """What every part uid of the session starts with (its seq follows)."""
    return hashlib.blake2b(session_uid.encode(), digest_size=8).hexdigest() + ":"

"""The uids llxprt-code sessions, calls and parts are stored under.

Session uid `llxprt:<sessionId>`: a session is one recording (a resumed session appends to its file,
`SessionRecordingService.initializeForResume`); the token-usage log names the same id. Calls and parts
are numbered in the session: `<session uid>:c<seq>` and `<session uid>:p<seq>`.
"""

from __future__ import annotations

NAME = "llxprt"


def session_uid(session_id: str) -> str:
    """The uid of session `session_id`."""
    return f"{NAME}:{session_id}"


def call_uid(session: str, seq: int) -> str:
    """The uid of call `seq` of the session whose uid is `session`."""
    return f"{session}:c{seq}"


def part_uid(session: str, seq: int) -> str:
    """The uid of part `seq` of the session whose uid is `session`."""
    return f"{session}:p{seq}"

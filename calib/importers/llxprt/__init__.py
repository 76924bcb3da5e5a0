"""llxprt-code importer: its session recordings and its token-usage logs (vybestack/llxprt-code).

Sources, each read only (`open_regular`), never locked:

- `<log>/tmp/<sha256 of the project root>/chats/session-<YYYY-MM-DDTHH-MM-SS>-<first 12 chars of the
  session id>.jsonl`: the session recording, since v0.9 (`packages/core/src/recording/
  SessionRecordingService.ts` `materialize()`, `types.ts`). Its own envelope format, not gemini-cli's:
  see `calib.importers.llxprt.chats` (events, blocks) and `calib.importers.llxprt.session` (calls,
  usage semantics per provider, the join). One session per file, uid `llxprt:<sessionId>`; layout
  `llxprt-chats-usage` when its token-usage log sits beside it and was joined, else `llxprt-chats`.
- `<log>/tmp/<hash>/token-usage/<sessionId>.jsonl`: the token-usage log of the 0.11 nightlies
  (`docs/token-usage-log.md`; `packages/agents/src/core/tokenUsageRecords.ts`): counts only, no text.
  Read on its own it yields the agent's estimate-versus-provider pairs as `AgentEstimate`s (as Dexto's
  log lines do), one per attempt the provider counted; read beside its recording it fills in the
  cache and reasoning counts the recording leaves out (`calib.importers.llxprt.usage_log`).

`<log>` is `LLXPRT_LOG_HOME`, else `LLXPRT_CONFIG_HOME`, else the OS's state folder since v0.10.0, and
`~/.llxprt` up to 0.9.x (`calib.importers.llxprt.paths`). A recording line of an unknown format
version (`v` other than 1) or a token-usage record of an unknown `schema_version` (other than 0 or 1)
fails that file with one `InputError`; a damaged or unfinished line costs only itself (`InputWarning`).
A recording is read whole each time (no `parse_from`): a rewind or compaction rewrites what the
earlier calls were sent, and the token-usage log beside it may have grown.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from calib.core.records import Record
from calib.importers.llxprt.chats import read_recording
from calib.importers.llxprt.identity import NAME
from calib.importers.llxprt.paths import default_temp_roots
from calib.importers.llxprt.session import LAYOUT_CHATS, LAYOUT_CHATS_USAGE, LAYOUTS, build_session
from calib.importers.llxprt.sniff import is_recording, is_token_usage_log
from calib.importers.llxprt.usage_log import beside, parse_usage_log, read_beside

__all__ = ["IMPORTER", "LAYOUTS", "LAYOUT_CHATS", "LAYOUT_CHATS_USAGE", "NAME", "LlxprtImporter"]


class LlxprtImporter:
    """Importer of llxprt-code session recordings and token-usage logs."""

    name = NAME

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """A recording (by its name in `chats/`, else its `session_start` line) or a token-usage log."""
        try:
            return is_recording(path, head) or is_token_usage_log(path, head)
        except (ValueError, TypeError):
            return False

    def sniff_dir(self, path: Path) -> bool:
        """Always False: every source is a file of its own."""
        return False

    def parse(self, path: Path) -> Iterator[Record]:
        """A recording's session (joined with its token-usage log), or a token-usage log's pairs."""
        if path.parent.name == "token-usage" and not is_recording(path, b""):
            yield from parse_usage_log(path)
            return
        rec = read_recording(path)
        log = beside(path, str(rec.start["sessionId"]))
        turns = read_beside(log) if log is not None else None
        yield build_session(path, rec, turns, log if turns is not None else None)
        yield from rec.warnings

    def default_paths(self) -> list[Path]:
        """`<log>/tmp` for each log folder llxprt-code may use here (override, OS default, `~/.llxprt`)."""
        return default_temp_roots()


IMPORTER = LlxprtImporter()

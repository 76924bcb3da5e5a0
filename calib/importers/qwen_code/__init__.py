"""Qwen Code importer: the chat logs under `~/.qwen/projects/<project>/chats/<sessionId>.jsonl`.

Format facts this importer relies on, each with the file of `QwenLM/qwen-code` it was read from:

- Where: `Storage.getRuntimeBaseDir()/projects/<sanitizeCwd(project root)>/chats/<sessionId>.jsonl`;
  the base is `$QWEN_RUNTIME_DIR`, else a runtime dir set in settings, else `~/.qwen` on every OS
  (`packages/core/src/config/storage.ts`). The project folder replaces every character that is not
  ASCII alphanumeric by `-` (the path lowercased first on Windows; `packages/core/src/utils/paths.ts`),
  so it is never decoded: the project is the records' `cwd`. A runtime dir set only in settings is not
  looked up: pass that folder to `calib ingest`.
- Lines: one `ChatRecord` each, `{uuid, parentUuid, sessionId, timestamp, type, subtype?, cwd,
  version, message?, usageMetadata?, model?, contextWindowSize?, toolCallResult?, systemPayload?,
  isSidechain?}`, `type` one of `user`, `assistant`, `tool_result`, `system`; `message` is a Gemini
  `Content` (`role`, `parts`: `text` with `thought: true` for reasoning, `functionCall`,
  `functionResponse`, `inlineData`) (`packages/core/src/services/chatRecordingService.ts`).
  Records form a tree through `parentUuid`; a rewind re-roots the chain, leaving the rewound turn on
  a dead branch. The conversation is the chain from the last record written back to the root
  (`conversation_path`); records off it and side-chain records (`isSidechain`, sub-agents) are left
  out and counted (`off_path_records`).
- Calls: each `assistant` record is one model response with the usage of its request as
  `usageMetadata`: `recordAssistantTurn` runs once per streamed response, its message being one
  thought part, the consolidated text, then the function calls (`packages/core/src/core/geminiChat.ts`). Every call is also recorded a second time, as a
  `system`/`ui_telemetry` record holding a `qwen-code.api_response` event (`input_token_count`,
  `output_token_count`, ..., `auth_type`) written before the assistant record (`recordUiTelemetryEvent`;
  splitrail's fixture `src/analyzers/tests/source_data/qwen_code.jsonl` shows the order). Calls are
  counted from the assistant records only; the event just before one gives its `auth_type`, mapped to
  the provider (`qwen-oauth` -> `qwen`, `openai`, `anthropic`, `gemini-api-key`/`vertex-ai` -> `google`;
  without one, the model name's family decides).
- Usage (`calib.importers.qwen_code.usage`): `promptTokenCount` is the whole prompt, cache included,
  in every back end, so `ctx = promptTokenCount`; `cachedContentTokenCount` is the cache read.
  * OpenAI-compatible back ends (`packages/core/src/core/openaiContentGenerator/converter.ts`):
    `candidatesTokenCount = completion_tokens`, which includes reasoning; `thoughtsTokenCount` is
    `reasoning_tokens`, or, when the provider gives none, an estimate from the streamed reasoning
    text (capped at the completion); `totalTokenCount = total_tokens` (prompt + completion). Such a
    record is told by `thoughtsTokenCount > 0` and `total == prompt + candidates` (style `openai`):
    `carry = candidates - thoughts`. Where the thoughts were estimated, that carry is as good as the
    estimate. Qwen Code keeps thought parts in the history it sends and passes them back as
    `reasoning_content` (`session-api-history.ts`, `converter.ts` `processContent`); whether the next
    prompt count holds them depends on the model's chat template, so calib takes them as not counted
    (reasoning parts `resent=False`), and a model that counts them shows it in its deltas.
  * When the provider reported only `total_tokens`, the converter makes the split up:
    `promptTokenCount = Math.round(0.7 * total)`, `candidatesTokenCount = total - prompt`. On disk
    that is told apart only by that arithmetic (`split_by_seventy`): such a call keeps its counts as
    recorded with usage `suspect` and no `ctx` or `carry`, so it is never scored (a real call whose
    counts happen to fall on the split is left out too: rare, as prompts dwarf outputs).
  * Gemini back ends write Gemini's own usage: candidates exclude thoughts and the total adds them
    (style `gemini`): `carry = candidates`.
  * Anthropic back ends (`anthropicContentGenerator/usage.ts`): prompt = input + cache read + cache
    creation, or `input` alone when it is at least both cache fields (a guard for proxies that count
    OpenAI-style). Older releases summed input and cache read only, leaving cache creation out; the
    release that changed it is not pinned down here, so those calls are read like the others (their
    `ctx` may be low by the cache written). `version` (the CLI release) is kept in the session meta.
  * No `usageMetadata`, or all counts zero: usage `missing`. A count that is not a count: `invalid`.
- Compression: a `system`/`chat_compression` record whose `systemPayload.compressedHistory` is the
  history the model is sent from then on (a summary user turn, the model's acknowledgement, restored
  files; `ChatCompressionRecordPayload`; composed in `packages/core/src/services/
  chatCompressionService.ts`). Its contents become new parts (user text as `summary`) where the next
  prompt starts; tool results waiting to be sent when it ran follow it again. `info` gives the token
  counts before and after (`meta.compactions`).
- Tool results: `tool_result` records whose `functionResponse.response` is `{output}` or `{error}`
  (a lone string is the part text; anything else its compact JSON).
- Title: the last `system`/`custom_title` record's `customTitle`, else the first line of the first
  user text.

Bad input: a damaged line, or one that is no chat record, is left out with a warning naming its line;
a last line still being written is left for the next read; a file with no chat record, or written by a
Qwen Code major version calib does not know (`version` above 0.x), is one `InputError` naming it.
Layout: `qwen-code-jsonl`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from calib.core.home import expand_home
from calib.core.records import Record
from calib.importers.logfile import read_log_bytes
from calib.importers.qwen_code.log import NAME, READ_MEMORY_FACTOR, line_warnings, read_log
from calib.importers.qwen_code.session import LAYOUT, LAYOUTS, parse_session
from calib.importers.qwen_code.sniff import sniff

__all__ = ["IMPORTER", "LAYOUT", "LAYOUTS", "NAME", "QwenCodeImporter", "runtime_dir", "sniff"]

RUNTIME_ENV = "QWEN_RUNTIME_DIR"


def runtime_dir() -> Path:
    """Qwen Code's runtime base folder: `$QWEN_RUNTIME_DIR`, else `~/.qwen` (on every OS)."""
    configured = os.environ.get(RUNTIME_ENV, "").strip()
    if configured:
        return expand_home(configured)
    return Path.home() / ".qwen"


class QwenCodeImporter:
    """Importer of Qwen Code chat logs (one session per file)."""

    name = NAME

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """True for a Qwen Code chat log (judged from its name and first bytes)."""
        return sniff(path, head)

    def sniff_dir(self, path: Path) -> bool:
        """Always False: every chat log is a file of its own."""
        return False

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse one chat log into its session, then a warning for each line left out."""
        log = read_log(path, read_log_bytes(path, READ_MEMORY_FACTOR))
        yield parse_session(path, log)
        yield from line_warnings(path, log)

    def default_paths(self) -> list[Path]:
        """The runtime folder's `projects/`: `$QWEN_RUNTIME_DIR/projects`, else `~/.qwen/projects`."""
        return [runtime_dir() / "projects"]


IMPORTER = QwenCodeImporter()

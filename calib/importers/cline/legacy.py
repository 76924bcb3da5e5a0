"""Cline's task folders from before its SDK (layout `cline-task`), read with `calib.importers.taskfolder`.

Facts relied on (cline/cline at v3.85.0 unless named):

- Each `api_req_started` entry of `ui_messages.json` carries `modelInfo {modelId, providerId, mode}`
  (`src/core/task/index.ts` `say()`, `src/shared/messages/metrics.ts`); so does each assistant message of
  `api_conversation_history.json`, whose `metrics.tokens` are not read: `prompt` holds the handler's
  raw input whatever its doc comment says, and `cached` is writes plus reads (`src/core/task/index.ts`).
- `tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads` are the provider handler's `ApiStreamUsageChunk`
  as it yielded them (`src/core/task/utils.ts` `updateApiReqMsg`), so whether `tokensIn` holds the
  cache depends on the handler (`src/core/api/providers/<providerId>.ts`):
  - without the cache (`input + cacheReads + cacheWrites` is the prompt): `anthropic`, `vertex`
    (`usage.input_tokens`), `bedrock` (Converse `inputTokens`), `cline` and `openrouter` (prompt minus
    cache read and write), `gemini` and `openai-native` (prompt minus cached);
  - with it (`tokensIn` is the prompt): `openai`, `xai`, `lmstudio`, `litellm`, `requesty`
    (`prompt_tokens`), `ollama` (`prompt_eval_count`, no cache fields);
  - `deepseek`: `tokensIn` is the prompt minus cache hits, `cacheReads` the hits and `cacheWrites`
    the misses again, so the prompt is `tokensIn + cacheReads` and nothing was written.
  Any other provider (and an entry without `modelInfo`, written by versions before it) is read as
  Cline reads it itself: its context-window check adds all four counts
  (`src/shared/getApiMetrics.ts` `getLastApiReqTotalTokens`), i.e. without the cache.
- `tokensOut` is the handler's output count (thinking included for Anthropic).
- The call is grouped under the vendor its model name says (`calib.importers.opencode.providers.vendor`),
  else its `providerId`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calib.core.errors import InputWarning
from calib.core.records import ParsedSession
from calib.core.tally import WarningTally
from calib.importers.opencode.providers import vendor
from calib.importers.taskfolder import (
    CallInfo,
    Request,
    Usage,
    build_task,
    checked,
    exclusive,
    inclusive,
    project_of,
    read_task,
)

LAYOUT = "cline-task"
INCLUSIVE = frozenset({"openai", "xai", "lmstudio", "litellm", "requesty", "ollama"})


def _deepseek(tokens_in: int, tokens_out: int, read: int, write: int) -> Usage:
    return exclusive(tokens_in, tokens_out, read, 0)


def usage_of(info: dict[str, Any], provider_id: str | None) -> Usage:
    """A request's usage under its provider handler's convention (see the module docstring)."""
    if provider_id in INCLUSIVE:
        return checked(info, inclusive)
    if provider_id == "deepseek":
        return checked(info, _deepseek)
    return checked(info, exclusive)


def _model_info(*holders: dict[str, Any] | None) -> tuple[str | None, str | None]:
    for holder in holders:
        info = holder.get("modelInfo") if holder is not None else None
        if isinstance(info, dict):
            model = info.get("modelId") if isinstance(info.get("modelId"), str) else None
            provider = info.get("providerId") if isinstance(info.get("providerId"), str) else None
            if model or provider:
                return provider, model
    return None, None


def read_call(
    request: Request | None, message: dict[str, Any] | None, users: list[dict[str, Any]]
) -> CallInfo:
    """A Cline call's usage, provider and model."""
    provider_id, model = _model_info(request.entry if request else None, message)
    usage = usage_of(request.info, provider_id) if request is not None else checked({}, exclusive)
    return CallInfo(usage, vendor(provider_id, model), model)


def parse_task(path: Path) -> list[ParsedSession | InputWarning]:
    """A Cline task folder as one session, then a warning for each damaged file or entry."""
    task = read_task(path)
    session = build_task(
        task, tool="cline", layout=LAYOUT, read_call=read_call, project=project_of(task.history)
    )
    tally = WarningTally(str(path))
    tally.extend(task.warnings)
    return [session, *tally]

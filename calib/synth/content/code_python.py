"""Python source templates: a module header and the blocks a synthetic module is assembled from."""

from __future__ import annotations

PY_HEADER = '''"""@Domain@ @purpose@."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

log = logging.getLogger(__name__)

@CONST@_STATUSES = frozenset({"pending", "active", "failed", "done"})
DEFAULT_PAGE_SIZE = @n@


class @Ent@Error(RuntimeError):
    """Raised when a @ent@ cannot be processed."""


@dataclass
class @Ent@:
    id: str
    @text@: str
    @num@: int = 0
    @group@: str = "default"
    status: str = "pending"
    created_at: datetime = field(default_factory=datetime.utcnow)
    tags: list[str] = field(default_factory=list)
'''

PY_BLOCKS = [
    '''

def validate_@ent@(@ent@: @Ent@) -> list[str]:
    """Return the problems found in a @ent@; empty when it is valid."""
    problems: list[str] = []
    if not @ent@.@text@:
        problems.append("@text@ is required")
    if @ent@.@num@ < 0:
        problems.append(f"@num@ must be >= 0, got {@ent@.@num@}")
    if @ent@.status not in @CONST@_STATUSES:
        problems.append(f"unknown status {@ent@.status!r}")
    return problems
''',
    '''

def @verb@_with_retry(client: Any, @ent@_id: str, *, attempts: int = @n3@) -> @Ent@:
    """Call the upstream API, backing off exponentially on timeouts."""
    delay = 0.5
    last_error: Exception | None = None
    for attempt in range(1, attempts + 1):
        try:
            return client.@verb@(@ent@_id)
        except TimeoutError as exc:
            last_error = exc
            log.warning("@verb@ %s failed (attempt %d/%d)", @ent@_id, attempt, attempts)
            time.sleep(delay)
            delay *= 2
    raise @Ent@Error(f"giving up on {@ent@_id} after {attempts} attempts") from last_error
''',
    '''

def totals_by_@group@(@ents@: Iterable[@Ent@]) -> dict[str, int]:
    """Sum @num@ per @group@, skipping archived records."""
    totals: dict[str, int] = defaultdict(int)
    for item in @ents@:
        if item.status == "archived":
            continue
        totals[item.@group@] += item.@num@
    return dict(sorted(totals.items()))
''',
    '''

def parse_@ent@(raw: dict[str, Any]) -> @Ent@:
    """Build a @Ent@ from an API payload."""
    try:
        created = datetime.fromisoformat(raw["created_at"])
    except (KeyError, ValueError) as exc:
        raise @Ent@Error(f"bad created_at in {raw.get('id')!r}") from exc
    return @Ent@(
        id=str(raw["id"]),
        @text@=raw.get("@text@", ""),
        @num@=int(raw.get("@num@", 0)),
        @group@=raw.get("@group@", "default"),
        status=raw.get("status", "pending"),
        created_at=created,
        tags=list(raw.get("tags", [])),
    )
''',
    '''

class @Ent@Cache:
    """Keeps recently used @ents@ in memory for a few seconds."""

    def __init__(self, ttl: float = @ttl@) -> None:
        self._ttl = ttl
        self._items: dict[str, tuple[float, @Ent@]] = {}

    def get(self, key: str) -> @Ent@ | None:
        entry = self._items.get(key)
        if entry is None:
            return None
        stored_at, value = entry
        if time.monotonic() - stored_at > self._ttl:
            del self._items[key]
            return None
        return value

    def put(self, key: str, value: @Ent@) -> None:
        self._items[key] = (time.monotonic(), value)

    def __len__(self) -> int:
        return len(self._items)
''',
    '''

async def fetch_all_@ents@(session: Any, base_url: str, page_size: int = DEFAULT_PAGE_SIZE) -> list[dict[str, Any]]:
    """Follow the cursor until the API has returned every page."""
    results: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": page_size}
        if cursor:
            params["cursor"] = cursor
        async with session.get(f"{base_url}/@ents@", params=params) as resp:
            resp.raise_for_status()
            body = await resp.json()
        results.extend(body["data"])
        cursor = body.get("next_cursor")
        if not cursor:
            return results
''',
    '''

def @verb@_batch(@ents@: list[@Ent@], *, chunk_size: int = @n@) -> int:
    """Process @ents@ in chunks; returns how many were handled."""
    handled = 0
    for start in range(0, len(@ents@), chunk_size):
        chunk = @ents@[start : start + chunk_size]
        # @cjk_comment@
        pending = [x for x in chunk if x.status == "pending"]
        for item in pending:
            item.status = "active"
        handled += len(pending)
        log.debug("chunk %d: %d of %d pending", start // chunk_size, len(pending), len(chunk))
    return handled
''',
    '''

def summarize(@ents@: list[@Ent@]) -> dict[str, Any]:
    """Counts per status and the newest record, for the dashboard."""
    by_status: dict[str, int] = defaultdict(int)
    for item in @ents@:
        by_status[item.status] += 1
    newest = max(@ents@, key=lambda x: x.created_at, default=None)
    return {
        "count": len(@ents@),
        "by_status": dict(by_status),
        "newest": newest.id if newest else None,
    }
''',
]
